<?php
// One PHP-FPM request of TestPHPFPMWorkers: fpm_hot_a for the seconds
// asked (?s=N), in the worker that took the request.
function fpm_hot_a(int $n): int
{
    $s = 0;
    for ($i = 0; $i < $n; $i++) { $s += ($i * $i) % 7; }
    return $s;
}

$end = microtime(true) + (float)($_GET['s'] ?? 10);
while (microtime(true) < $end) {
    fpm_hot_a(100000);
}
echo "done\n";
