// A known chain of Java methods burning CPU for the given CPU seconds:
// main -> handleRequest -> parse -> hotLoop; it prints "warm" after the
// first 2 CPU seconds (its methods compiled by then).  The test runs it with
// -XX:CompileCommand=dontinline,Chain::* (the JIT would otherwise compile
// the small callers into one method: the chain is the program's, the test
// checks the agent names it) and gets its perf map through the JVM's
// attach mechanism, not through a flag of the program's.
import java.lang.management.ManagementFactory;

public class Chain {
	static long hotLoop(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i) % 1000003;
		return total;
	}

	static long parse(long n) {
		return hotLoop(n) + 1;
	}

	static long handleRequest(long n) {
		return parse(n) * 2;
	}

	public static void main(String[] args) {
		double seconds = args.length > 0 ? Double.parseDouble(args[0]) : 5;
		java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
		long sum = 0;
		boolean warm = false;
		long cpu;
		while ((cpu = threads.getCurrentThreadCpuTime()) < seconds * 1e9) {
			sum += handleRequest(20000);
			if (!warm && cpu > 2e9) {
				System.out.println("warm");
				System.out.flush();
				warm = true;
			}
		}
		System.out.println(ProcessHandle.current().pid() + " " + sum);
	}
}
