# Two hot Ruby methods in a 70:30 split of work, called through a few
# levels (a class method, a module's instance method, a block). Each call
# runs some milliseconds: on a loaded machine ~1 ms calls under 3.1 put
# a few points of the clock reads' cost into the first one. Measures
# its own CPU time in hot_a and hot_b (the thread's CPU clock) and
# prints, once a second, {"a": seconds in hot_a, "b": seconds in hot_b}
# as JSON lines.
#   hot.rb SECONDS [thread]   (thread: two Ruby threads, one running
#                              hot_a and one hot_b, each its own method)
#   hot.rb SECONDS cfunc      (a: the time in sort_c's call of the C
#                              function Array#sort, b: in hot_b)
#   hot.rb SECONDS cmp        (as cfunc, sorting Rationals: Array#sort
#                              calls the C function Rational#<=> from C,
#                              through rb_funcallv)
#   hot.rb SECONDS block      (a: block_a, its loop in a block two levels
#                              deep in a class's method; b: block_b, in a
#                              block of a module's method)
#   hot.rb SECONDS ractor     (as thread, each in a Ractor of its own)
#   hot.rb 0 labels           (prints the blocks' names as JSON, and exits)
module Hot
  # The label Ruby 3.4 gives a block (caller_locations' label, its method
  # qualified by the class or module that defines it: block in Foo#bar,
  # block in Foo.bar), from this Ruby's own reflection. 3.1 and 3.3 print
  # the bare label: both are recorded, the names' truth for the tests.
  def self.label(key, loc, owner, recv, meth)
    bare = loc.label
    cls = owner.singleton_class? ? "#{recv.name}." : "#{owner.name}#"
    $labels[key] = bare.sub(/#{Regexp.escape(meth.to_s)}\z/) { cls + meth.to_s }
    $labels["#{key}_bare"] = bare
  end

  # Included in Worker: a block in its method is named after the module.
  module Loops
    def block_b(n)
      s = 0
      [n].each do |m|
        Hot.label("b", caller_locations(0, 1)[0], method(__method__).owner, self, __method__) if $labels
        i = 0
        while i < m
          s += i * i
          i += 1
        end
      end
      s
    end
  end

  class Worker
    include Loops

    def block_a(n)
      s = 0
      1.times do
        [n].each do |k|
          Hot.label("a", caller_locations(0, 1)[0], method(__method__).owner, self, __method__) if $labels
          i = 0
          while i < k
            s += i * i
            i += 1
          end
        end
      end
      s
    end

    def hot_a(n)
      s = 0
      i = 0
      while i < n
        s += i * i
        i += 1
      end
      s
    end

    def hot_b(n)
      s = 0
      i = 0
      while i < n
        s += i * i
        i += 1
      end
      s
    end

    # Its time is in a C function called from Ruby (Array#sort of
    # Integers: no Ruby code runs inside it). The match sets $~ here,
    # which moves the frame's method entry into a special-variable
    # holder (its class must still name it).
    def sort_c(ary)
      return nil unless /sort/ =~ "sort_c"
      ary.sort
    end
  end

  def self.cpu
    Process.clock_gettime(Process::CLOCK_THREAD_CPUTIME_ID)
  end

  # hot_a about 20 ms and hot_b 8 ms on 3.1: in calls of a few ms the
  # timer's samples stray from the CPU clock by a point or two here.
  def self.work(seconds)
    w = Worker.new
    stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    a = b = 0.0
    nxt = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      1.times do
        Hot.label("work", caller_locations(0, 1)[0], method(__method__).owner, self, __method__) if $labels
        # Rounds of one length alias with the sampler's period on an
        # idle machine (YJIT's rounds of ~8 ms met 499 Hz's four
        # periods: 44-62% of the samples in hot_a for 70% of the time;
        # 397 Hz gave 69.9%): each round is 0.75-1.25x, hot_a 70%.
        f = 0.75 + Random.rand * 0.5
        t = cpu
        w.hot_a((630_000 * f).to_i)
        m = cpu
        w.hot_b((270_000 * f).to_i)
        e = cpu
        a += m - t
        b += e - m
      end
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= nxt
        $stdout.write(%({"a": #{a}, "b": #{b}}\n))
        $stdout.flush
        nxt += 1
      end
    end
  end

  # As work, with the time in blocks.
  def self.blocks(seconds)
    w = Worker.new
    stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    a = b = 0.0
    nxt = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      t = cpu
      w.block_a(210_000)
      m = cpu
      w.block_b(90_000)
      e = cpu
      a += m - t
      b += e - m
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= nxt
        $stdout.write(%({"a": #{a}, "b": #{b}}\n))
        $stdout.flush
        nxt += 1
      end
    end
  end

  # As work, with the C function Array#sort where hot_a was (of
  # Rationals: it calls Rational#<=> for each comparison).
  def self.cfuncs(seconds, rationals)
    w = Worker.new
    ary = if rationals
            # about 20 ms to sort, as below
            Array.new(60_000) { |i| Rational((i * 7919) % 100_003, 7) }
          else
            # 300,000 to sort (about 20 ms) and hot_b's 270,000 steps:
            # at 100,000 and 90,000 (7 and 3 ms) samples by the timer, perf
            # record's as well as ours, gave Array#sort 1-2 points less
            # than its CPU time on this VM (a boundary effect: 12,000 gave
            # half); at three times the length they agree within 0.3.
            Array.new(300_000) { |i| (i * 7919) % 300_007 }
          end
    nb = 270_000
    stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    a = b = 0.0
    nxt = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 1
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      t = cpu
      w.sort_c(ary)
      m = cpu
      w.hot_b(nb)
      e = cpu
      a += m - t
      b += e - m
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) >= nxt
        $stdout.write(%({"a": #{a}, "b": #{b}}\n))
        $stdout.flush
        nxt += 1
      end
    end
  end

  # Each thread spins in its own method; the report is each thread's own
  # CPU time.
  # name: in a Ractor, the name its native thread must carry.
  def self.spin_a(stop, cell, name = nil)
    w = Worker.new
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      w.hot_a(10_000)
      cell[0] = cpu
      follow(name) if name
    end
  end

  def self.spin_b(stop, cell, name = nil)
    w = Worker.new
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      w.hot_b(10_000)
      cell[0] = cpu
      follow(name) if name
    end
  end

  def self.threads(seconds)
    stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    ca = [0.0]
    cb = [0.0]
    ta = Thread.new { spin_a(stop, ca) }
    tb = Thread.new { spin_b(stop, cb) }
    ta.name = "ruby-a"
    tb.name = "ruby-b"
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      sleep 1
      $stdout.write(%({"a": #{ca[0]}, "b": #{cb[0]}}\n))
      $stdout.flush
    end
    ta.join
    tb.join
  end

  # As threads, each spinning method in a Ractor of its own, its native
  # thread named as the thread is. 3.3 runs a non-main Ractor's threads
  # M:N: a thread may move to another native thread at any blocking
  # point (a CI run had both Ractors swap theirs after naming them), and
  # Thread#name= leaves the native thread's name. So each round the
  # thread checks which native thread it is on (no system call) and
  # writes the name to /proc again when it moved; the report is the CPU
  # time of the native threads carrying each name (a Ractor shares no
  # array).
  def self.follow(name)
    tid = Thread.current.native_thread_id
    return if tid == Thread.current[:named_tid]
    File.write("/proc/thread-self/comm", name)
    Thread.current[:named_tid] = tid
  end

  def self.cpu_named(name)
    Dir.children("/proc/self/task").sum do |tid|
      next 0.0 unless File.read("/proc/self/task/#{tid}/comm").chomp == name
      File.read("/proc/self/task/#{tid}/schedstat").split[0].to_f / 1e9
    rescue SystemCallError
      0.0 # the thread ended
    end
  end

  def self.ractors(seconds)
    stop = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    Ractor.new(stop) do |s|
      Thread.current.name = "ruby-a"
      Hot.spin_a(s, [0.0], "ruby-a")
    end
    Ractor.new(stop) do |s|
      Thread.current.name = "ruby-b"
      Hot.spin_b(s, [0.0], "ruby-b")
    end
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < stop
      sleep 1
      $stdout.write(%({"a": #{cpu_named("ruby-a")}, "b": #{cpu_named("ruby-b")}}\n))
      $stdout.flush
    end
  end
end

secs = (ARGV[0] || "10").to_f
if ARGV[1] == "thread"
  Hot.threads(secs)
elsif ARGV[1] == "ractor"
  Warning[:experimental] = false
  Hot.ractors(secs)
elsif ARGV[1] == "cfunc" || ARGV[1] == "cmp"
  Hot.cfuncs(secs, ARGV[1] == "cmp")
elsif ARGV[1] == "block"
  Hot.blocks(secs)
elsif ARGV[1] == "labels"
  $labels = {}
  Hot::Worker.new.block_a(1)
  Hot::Worker.new.block_b(1)
  Hot.work(0.001)
  $stdout.write("{" + $labels.map { |k, v| "#{k.dump}: #{v.dump}" }.join(", ") + "}\n")
else
  Hot.work(secs)
end
