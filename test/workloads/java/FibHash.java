// A fib thread and a SHA hashing thread doing a known split of CPU work:
// the profiler's Java frames are judged against each thread's own CPU
// time. Usage: java FibHash SECONDS
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
            for (int i = 0; i < 64; i++)
                buf = digest(sha, buf);
            sink += buf[0];
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
