// A fib thread and a SHA hashing thread: fib runs all the time, hash two
// thirds of it (4 ms of work, 2 ms asleep), a 60/40 split of their CPU
// time; the profiler's Java frames are judged against each thread's own
// CPU time. Usage: java FibHash SECONDS
import java.security.MessageDigest;

public class FibHash {
    static volatile long sink;

    static long fib(int n) {
        if (n < 2)
            return n;
        return fib(n - 1) + fib(n - 2);
    }

    static void fibLoop(long untilNs) {
        while (System.nanoTime() < untilNs)
            sink += fib(27);
    }

    static void hashLoop(long untilNs) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[4096];
        while (System.nanoTime() < untilNs) {
            long burst = System.nanoTime() + 4_000_000;
            while (System.nanoTime() < burst)
                buf = digest(sha, buf);
            sink += buf[0];
            Thread.sleep(2);
        }
    }

    static byte[] digest(MessageDigest sha, byte[] buf) {
        sha.update(buf);
        byte[] d = sha.digest();
        System.arraycopy(d, 0, buf, 0, d.length);
        return buf;
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
        long until = System.nanoTime() + (long) (seconds * 1e9);
        Thread fibT = new Thread(() -> fibLoop(until), "fib");
        Thread hashT = new Thread(() -> {
            try {
                hashLoop(until);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        }, "hash");
        fibT.start();
        hashT.start();
        fibT.join();
        hashT.join();
    }
}
