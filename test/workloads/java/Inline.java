// Inlining: work() calls step() calls mix() (both small: the JIT inlines
// them into work's compiled code) and mix calls leaf(), too big to be
// inlined (over 325 bytes of bytecode), so leaf runs in its own compiled
// frame and the return address into work's code has the inlined chain
// mix -> step -> work in its debug info. No JVM flags: C1 then C2 compile
// work within the first second. Usage: java Inline SECONDS
public class Inline {
    static volatile long sink;

    static long work(long x) {
        for (int i = 0; i < 1000; i++)
            x = step(x, i);
        return x;
    }

    static long step(long x, int i) {
        return mix(x + i) ^ i;
    }

    static long mix(long x) {
        return leaf(x) + 1;
    }

    static long leaf(long x) {
        for (int i = 0; i < 4; i++) {
            x = (x ^ (x >>> 7)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 8)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 9)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 10)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 11)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 12)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 13)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 14)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 15)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 16)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 17)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 18)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 19)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 20)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 21)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 22)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 23)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 24)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 25)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 26)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 27)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 28)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 29)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 7)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 8)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 9)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 10)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 11)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 12)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 13)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 14)) * 0x9E3779B97F4A7C15L + i;
            x = (x ^ (x >>> 15)) * 0x9E3779B97F4A7C15L + i;
        }
        return x;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        long until = System.nanoTime() + (long) (seconds * 1e9);
        Thread t = new Thread(() -> {
            long x = 1;
            while (System.nanoTime() < until)
                x = work(x);
            sink = x;
        }, "inline");
        t.start();
        t.join();
    }
}
