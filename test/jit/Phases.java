// Code that a JVM compiles late: PHASES phases of SECONDS CPU seconds each
// (default 8 of 2.5), each calling a method of its own that nothing called
// before, so each phase's JIT code appears only as it starts.  Prints
// "phase K EPOCH" (seconds since 1970) as phase K starts and "end SUM EPOCH"
// at the end.  test/jit/run.sh checks that the agent names each phase's
// code soon after it starts, however late.
import java.lang.management.ManagementFactory;

public class Phases {
	static long phase0(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 0) % 1000003;
		return total;
	}

	static long phase1(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 1) % 1000005;
		return total;
	}

	static long phase2(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 2) % 1000007;
		return total;
	}

	static long phase3(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 3) % 1000009;
		return total;
	}

	static long phase4(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 4) % 1000011;
		return total;
	}

	static long phase5(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 5) % 1000013;
		return total;
	}

	static long phase6(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 6) % 1000015;
		return total;
	}

	static long phase7(long n) {
		long total = 0;
		for (long i = 0; i < n; i++)
			total = (total + i * i + 7) % 1000017;
		return total;
	}

	static long run(int phase, long n) {
		switch (phase) {
			case 0: return phase0(n);
			case 1: return phase1(n);
			case 2: return phase2(n);
			case 3: return phase3(n);
			case 4: return phase4(n);
			case 5: return phase5(n);
			case 6: return phase6(n);
			case 7: return phase7(n);
			default: return 0;
		}
	}

	static void say(String what) {
		System.out.println(what + " " + String.format("%.3f", System.currentTimeMillis() / 1000.0));
		System.out.flush();
	}

	public static void main(String[] args) {
		int phases = args.length > 0 ? Math.min(Integer.parseInt(args[0]), 8) : 8;
		double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 2.5;
		java.lang.management.ThreadMXBean threads = ManagementFactory.getThreadMXBean();
		long sum = 0;

		for (int phase = 0; phase < phases; phase++) {
			long end = threads.getCurrentThreadCpuTime() + (long) (seconds * 1e9);

			say("phase " + phase);
			while (threads.getCurrentThreadCpuTime() < end)
				sum += run(phase, 20000);
		}
		say("end " + sum);
	}
}
