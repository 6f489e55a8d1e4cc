// A Java stack DEPTH frames deep, busy at its leaf, for SECONDS (the
// benchmark of the HotSpot walk, beside deep_recursion's native stack).
// Run with -XX:CompileCommand=dontinline,Deep::down so that each level
// stays a frame of its own once compiled. Usage: java Deep SECONDS DEPTH
public class Deep {
    static volatile long sink;

    static long down(int n, long untilNs) {
        if (n > 1)
            return down(n - 1, untilNs) + 1;
        long s = 0;
        while (System.nanoTime() < untilNs)
            for (int i = 0; i < 100000; i++)
                s += i ^ (s >>> 3);
        return s;
    }

    public static void main(String[] args) {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        int depth = args.length > 1 ? Integer.parseInt(args[1]) : 50;
        long until = System.nanoTime() + (long) (seconds * 1e9);
        // the main thread's stack: main -> down x DEPTH; warm up first so
        // that the measured stack is compiled code
        for (int k = 0; k < 20000; k++)
            sink += down(depth, 0);
        sink += down(depth, until);
    }
}
