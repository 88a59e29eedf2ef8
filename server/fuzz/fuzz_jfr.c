/* libFuzzer harness: jfr_convert on any bytes, within a 64 MB budget */
#include <stdlib.h>

#include "jfr.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PushLimits	limits = {64u << 20, true};
	PushedProfiles out = {0};
	char		err[512];

	if (jfr_convert(data, size, &limits, &out, err, sizeof(err)))
		push_profiles_free(&out);
	else if (out.n != 0 || err[0] == 0)
		abort();				/* a failure leaves nothing and says why */
	return 0;
}
