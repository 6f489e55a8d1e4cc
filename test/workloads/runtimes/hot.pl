# Two hot Perl subs in a 70:30 split of work, in a package, called
# through a few levels. Measures its own CPU time in hot_a and hot_b
# (the thread's CPU clock) and prints, once a second,
# {"A": seconds in hot_a, "B": seconds in hot_b} as JSON lines.
#   hot.pl SECONDS              the work on the main thread
#   hot.pl SECONDS thread FILE  two ithreads, one running Hot::spin_a, the
#                               other Hot::spin_b; their kernel thread ids
#                               go to FILE as "a TID" and "b TID" lines
package Hot;
use strict;
use warnings;
use Config;
use Time::HiRes qw(clock_gettime CLOCK_THREAD_CPUTIME_ID CLOCK_MONOTONIC);

sub hot_a {
    my ($n) = @_;
    my $s = 0;
    for my $i (1 .. $n) {
        $s += $i * $i;
    }
    return $s;
}

sub hot_b {
    my ($n) = @_;
    my $s = 0;
    for my $i (1 .. $n) {
        $s += $i * $i;
    }
    return $s;
}

# one round: about 70 parts of hot_a, 30 of hot_b, each timed on the
# thread's own CPU clock. Each round's length varies at random, so that
# rounds do not keep one phase against the sampling timer (a fixed period
# makes samples fall on the same parts of the round run after run), and
# is some 13-40 ms: in phases of a few ms the timer's samples (perf's
# too) stray from the CPU clock by a point or two on this VM.
sub round {
    my ($acc) = @_;
    my $k = 0.5 + rand();
    my $t = clock_gettime(CLOCK_THREAD_CPUTIME_ID);
    hot_a(int(700000 * $k));
    my $m = clock_gettime(CLOCK_THREAD_CPUTIME_ID);
    hot_b(int(300000 * $k));
    my $e = clock_gettime(CLOCK_THREAD_CPUTIME_ID);
    $acc->{A} += $m - $t;
    $acc->{B} += $e - $m;
}

sub work {
    my ($seconds) = @_;
    my $end = clock_gettime(CLOCK_MONOTONIC) + $seconds;
    my $next = clock_gettime(CLOCK_MONOTONIC) + 1;
    my %acc = (A => 0, B => 0);
    local $| = 1;
    while (clock_gettime(CLOCK_MONOTONIC) < $end) {
        round(\%acc);
        if (clock_gettime(CLOCK_MONOTONIC) >= $next) {
            printf "{\"A\": %.6f, \"B\": %.6f}\n", $acc{A}, $acc{B};
            $next += 1;
        }
    }
}

sub gettid {
    # the syscall's number differs by architecture
    return syscall($Config{archname} =~ /aarch64/ ? 178 : 186);
}

sub spin_a {
    my ($end) = @_;
    my $s = 0;
    while (clock_gettime(CLOCK_MONOTONIC) < $end) {
        for my $i (1 .. 50000) { $s += $i }
    }
    return $s;
}

sub spin_b {
    my ($end) = @_;
    my $s = 0;
    while (clock_gettime(CLOCK_MONOTONIC) < $end) {
        for my $i (1 .. 50000) { $s ^= $i }
    }
    return $s;
}

sub threaded {
    my ($seconds, $file) = @_;
    require threads;
    my $end = clock_gettime(CLOCK_MONOTONIC) + $seconds;
    my @t;
    for my $which ('a', 'b') {
        push @t, threads->create(sub {
            open(my $f, '>>', $file) or die "$file: $!";
            printf $f "%s %d\n", $which, gettid();
            close($f);
            return $which eq 'a' ? spin_a($end) : spin_b($end);
        });
    }
    $_->join for @t;
}

package main;

my $seconds = $ARGV[0] // 10;
if (($ARGV[1] // '') eq 'thread') {
    Hot::threaded($seconds, $ARGV[2]);
} else {
    Hot::work($seconds);
}
