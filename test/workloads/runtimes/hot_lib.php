<?php
// hot_b of hot.php, in a file of its own: functions of an included file.

function hot_b(int $n): int
{
    $s = 0;
    for ($i = 0; $i < $n; $i++) { $s += ($i * $i) % 7; }
    return $s;
}
