// Java threads with OTEP 4947 thread context and attributes, published by
// a JNI library (test/workloads/context/jni_publisher.c): thread ctx-<i>
// sets its context once (trace id bytes i + 1, http.route "/route-<i>")
// and then runs Java code (fib), so its samples carry HotSpot frames and
// that context together.
// Usage: java CtxJava LIBRARY SECONDS
public class CtxJava {
    static native int publishProcess();

    static native void setContext(int i);

    static volatile long sink;

    static long fib(int n) {
        if (n < 2)
            return n;
        return fib(n - 1) + fib(n - 2);
    }

    public static void main(String[] args) throws Exception {
        System.load(args[0]);
        long until = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        int e = publishProcess();
        if (e != 0)
            throw new RuntimeException("process context: " + e);
        Thread[] threads = new Thread[2];
        for (int i = 0; i < threads.length; i++) {
            final int k = i;
            threads[i] = new Thread(() -> {
                setContext(k);
                while (System.nanoTime() < until)
                    sink += fib(22);
            }, "ctx-" + i);
            threads[i].start();
        }
        for (Thread t : threads)
            t.join();
    }
}
