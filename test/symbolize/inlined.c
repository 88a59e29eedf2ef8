/* A program with inlined calls (leaf in mid in main), built by test/symbolize/run.sh. */
#include <stdio.h>
static inline __attribute__((always_inline)) int leaf(int x) { return x * 3 + printf("%d", x); }
static inline __attribute__((always_inline)) int mid(int x) { return leaf(x) + 1; }
int main(int argc, char **argv) { return mid(argc); }
