// FibHash under the Elastic APM agent: the fib thread works inside
// transactions, the hash thread inside a child span of its transactions,
// back to back. Every transaction is printed when it ends, so the test
// knows which trace/span ids each thread had when:
//   TX <thread> <trace_id> <transaction_id> <span_id> <start_unix_ns> <end_unix_ns>
// Usage (with -javaagent and the API jar on the class path):
//   java ApmFibHash SECONDS LINGER_SECONDS
import co.elastic.apm.api.ElasticApm;
import co.elastic.apm.api.Scope;
import co.elastic.apm.api.Span;
import co.elastic.apm.api.Transaction;
import java.security.MessageDigest;
import java.time.Instant;

public class ApmFibHash {
    static volatile long sink;

    static long fib(int n) {
        if (n < 2)
            return n;
        return fib(n - 1) + fib(n - 2);
    }

    static byte[] digest(MessageDigest sha, byte[] buf) {
        sha.update(buf);
        byte[] d = sha.digest();
        System.arraycopy(d, 0, buf, 0, d.length);
        return buf;
    }

    static long nowUnixNs() {
        Instant i = Instant.now();
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    static synchronized void report(String thread, Transaction t, String spanId, long start, long end) {
        System.out.println("TX " + thread + " " + t.getTraceId() + " " + t.getId() + " " + spanId + " " + start + " " + end);
        System.out.flush();
    }

    static void fibLoop(long untilNs) {
        while (System.nanoTime() < untilNs) {
            Transaction t = ElasticApm.startTransaction();
            t.setName("fib");
            long start = nowUnixNs();
            try (Scope s = t.activate()) {
                long burst = System.nanoTime() + 40_000_000;
                while (System.nanoTime() < burst)
                    sink += fib(22);
            }
            long end = nowUnixNs();
            t.end();
            report("fib", t, t.getId(), start, end);
        }
    }

    static void hashLoop(long untilNs) throws Exception {
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        byte[] buf = new byte[4096];
        while (System.nanoTime() < untilNs) {
            Transaction t = ElasticApm.startTransaction();
            t.setName("hash");
            long start, end;
            String spanId;
            try (Scope s = t.activate()) {
                Span sp = t.startSpan("app", "digest", null);
                sp.setName("digest");
                spanId = sp.getId();
                try (Scope s2 = sp.activate()) {
                    start = nowUnixNs();
                    long burst = System.nanoTime() + 40_000_000;
                    while (System.nanoTime() < burst)
                        buf = digest(sha, buf);
                    end = nowUnixNs();
                } finally {
                    sp.end();
                }
            }
            t.end();
            sink += buf[0];
            report("hash", t, spanId, start, end);
        }
    }

    public static void main(String[] args) throws Exception {
        double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 10;
        double linger = args.length > 1 ? Double.parseDouble(args[1]) : 3;
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
        System.out.println("DONE");
        System.out.flush();
        // The agent holds transactions back for the profiler's messages
        // and reports in batches: give it time before the JVM exits.
        Thread.sleep((long) (linger * 1000));
    }
}
