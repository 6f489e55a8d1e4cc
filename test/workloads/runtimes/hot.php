<?php
// Two hot PHP functions in a 70:30 split of work, called through a few
// levels (class methods and plain functions; hot_b lives in an included
// file). Measures its own CPU time in each (getrusage: the process is one
// thread) and prints, once a second, {"a": seconds in Hot::hot_a,
// "b": seconds in hot_b} as JSON lines.
//   hot.php SECONDS
require_once __DIR__ . '/hot_lib.php';

function cpu(): float
{
    $r = getrusage();
    return $r['ru_utime.tv_sec'] + $r['ru_utime.tv_usec'] / 1e6 +
        $r['ru_stime.tv_sec'] + $r['ru_stime.tv_usec'] / 1e6;
}

class Hot
{
    public function hot_a(int $n): int
    {
        $s = 0;
        for ($i = 0; $i < $n; $i++) { $s += ($i * $i) % 7; }
        return $s;
    }
}

class Runner
{
    public float $a = 0.0;
    public float $b = 0.0;

    public function step(Hot $h): void
    {
        $t = cpu();
        $h->hot_a(700000);
        $m = cpu();
        hot_b(300000);
        $e = cpu();
        $this->a += $m - $t;
        $this->b += $e - $m;
    }
}

function work(float $seconds): void
{
    $end = microtime(true) + $seconds;
    $next = microtime(true) + 1;
    $r = new Runner();
    $h = new Hot();
    while (microtime(true) < $end) {
        $r->step($h);
        // A pause of random length, up to 2.5 ms, between rounds: the
        // sampler's period is fixed, and rounds of a steady length (the
        // JIT's are ~9 ms, 4.5 periods at 499 Hz) would keep the samples
        // at a few phases of the round, off its 70:30 split by up to a
        // ninth. Off the CPU, the pause moves each round's phase at random.
        usleep(mt_rand(0, 2500));
        if (microtime(true) >= $next) {
            echo json_encode(['a' => $r->a, 'b' => $r->b]), "\n";
            $next += 1;
        }
    }
}

work((float)($argv[1] ?? 10));
