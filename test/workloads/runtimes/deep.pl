# A Perl stack DEPTH subs deep, busy at its leaf, for SECONDS
# (benchmark of the interpreter walk).   deep.pl SECONDS DEPTH
package Deep;
use strict;
use warnings;
use Time::HiRes qw(time);

sub down {
    my ($n, $end) = @_;
    return down($n - 1, $end) if $n > 1;
    my $s = 0;
    while (time() < $end) {
        for my $i (1 .. 10000) { $s += $i }
    }
    return $s;
}

package main;
Deep::down($ARGV[1], time + $ARGV[0]);
