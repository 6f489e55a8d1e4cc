# A Ruby stack DEPTH methods deep, busy at its leaf, for SECONDS
# (benchmark of the control-frame walk).   ruby deep.rb SECONDS DEPTH
module Deep
  def self.down(n, stop)
    return down(n - 1, stop) if n > 1

    s = 0
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      i = 0
      while i < 10_000
        s += i
        i += 1
      end
    end
    s
  end
end

Deep.down(Integer(ARGV[1]), Process.clock_gettime(Process::CLOCK_MONOTONIC) + Float(ARGV[0]))
