import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.ReentrantLock;

/*
 * A Java program with known hot spots for the JFR reader's test: two CPU
 * methods (spinHeavy does about twice the work of spinLight), allocations in
 * and outside TLABs, a contended monitor (jdk.JavaMonitorEnter) and a
 * contended ReentrantLock (jdk.ThreadPark), a thread waiting in native code
 * (jdk.NativeMethodSample) and stacks deeper than JFR records (truncated).
 * Runs for the seconds given; a second recording started halfway makes
 * the JVM's recording two chunks at least.
 */
public class Workload {
    static volatile long sink;
    static final Object monitor = new Object();
    static final ReentrantLock lock = new ReentrantLock();
    static volatile boolean stop;

    static long spinHeavy(long n) {
        long x = 0;
        for (long i = 0; i < 2 * n; i++) x += (i * 31) ^ (x >>> 3);
        return x;
    }

    static long spinLight(long n) {
        long x = 0;
        for (long i = 0; i < n; i++) x += (i * 17) ^ (x >>> 5);
        return x;
    }

    static long deep(int n) {
        return n == 0 ? spinLight(100_000) : deep(n - 1) + 1;
    }

    static void cpuLoop() {
        int i = 0;
        while (!stop) {
            sink += spinHeavy(200_000);
            sink += spinLight(200_000);
            if (++i % 4 == 0) sink += deep(100);
        }
    }

    static void acceptLoop() {
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            s.accept();
        } catch (java.io.IOException e) {
        }
    }

    static List<Object> keep = new ArrayList<>();

    static Object allocSmall() {
        return new long[16];
    }

    static Object allocLarge() {
        return new byte[4 << 20];
    }

    static void allocLoop() {
        int i = 0;
        while (!stop) {
            Object o = (++i % 64 == 0) ? allocLarge() : allocSmall();
            if (i % 1024 == 0) {
                keep.clear();
            }
            keep.add(o);
        }
    }

    static void holdMonitor() throws InterruptedException {
        synchronized (monitor) {
            Thread.sleep(30);
        }
    }

    static void monitorLoop() {
        try {
            while (!stop) holdMonitor();
        } catch (InterruptedException e) {
        }
    }

    static void holdLock() throws InterruptedException {
        lock.lock();
        try {
            Thread.sleep(30);
        } finally {
            lock.unlock();
        }
    }

    static void parkLoop() {
        try {
            while (!stop) holdLock();
        } catch (InterruptedException e) {
        }
    }

    public static void main(String[] args) throws Exception {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 5;
        List<Thread> threads = new ArrayList<>();
        threads.add(new Thread(Workload::cpuLoop, "cpu-worker"));
        threads.add(new Thread(Workload::allocLoop, "alloc-worker"));
        for (int i = 0; i < 3; i++) threads.add(new Thread(Workload::monitorLoop, "monitor-" + i));
        for (int i = 0; i < 3; i++) threads.add(new Thread(Workload::parkLoop, "park-" + i));
        Thread acceptor = new Thread(Workload::acceptLoop, "acceptor");
        acceptor.setDaemon(true);
        acceptor.start();
        for (Thread t : threads) t.start();
        Thread.sleep(seconds * 500);
        // a second recording, started and stopped, makes the first one start a new chunk
        try (jdk.jfr.Recording r = new jdk.jfr.Recording()) {
            r.start();
            Thread.sleep(100);
            r.stop();
        }
        Thread.sleep(seconds * 500);
        stop = true;
        for (Thread t : threads) t.join();
        System.out.println(sink);
    }
}
