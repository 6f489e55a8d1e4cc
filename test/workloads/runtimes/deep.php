<?php
// A PHP stack DEPTH frames deep, busy at its leaf, for SECONDS
// (benchmark of the PHP walk).   deep.php SECONDS DEPTH
function down(int $n, float $end): int
{
    if ($n > 1) {
        return down($n - 1, $end);
    }
    $s = 0;
    while (microtime(true) < $end) {
        for ($i = 0; $i < 10000; $i++) { $s += $i; }
    }
    return $s;
}

down((int)$argv[2], microtime(true) + (float)$argv[1]);
