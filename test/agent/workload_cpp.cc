// A C++ program for the agent's demangling test: it spends its time in
// parca_test::Spinner::spin(int), built with frame pointers.
#include <cstdlib>
#include <ctime>

namespace parca_test
{
class Spinner
{
  public:
	__attribute__((noinline)) long spin(int seconds);
};

long
Spinner::spin(int seconds)
{
	volatile long x = 0;

	while (std::clock() < (std::clock_t) seconds * CLOCKS_PER_SEC)
		for (int i = 0; i < 1000000; i++)
			x += i;
	return x;
}
}

int
main(int argc, char **argv)
{
	parca_test::Spinner s;

	return s.spin(argc > 1 ? std::atoi(argv[1]) : 3) == 42;
}
