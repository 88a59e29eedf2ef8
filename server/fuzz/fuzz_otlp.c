/* libFuzzer harness: otlp_convert on any bytes (protobuf, or JSON with FUZZ_OTLP_JSON) */
#include <stdlib.h>

#include "otlp.h"

#ifdef FUZZ_OTLP_JSON
#define AS_JSON true
#else
#define AS_JSON false
#endif

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	PushLimits	limits = {64u << 20, false};
	PushedProfiles out = {0};
	char		err[512];

	if (otlp_convert(data, size, AS_JSON, &limits, &out, err, sizeof(err)))
		push_profiles_free(&out);
	else if (out.n != 0 || err[0] == 0)
		abort();				/* a failure leaves nothing and says why */
	return 0;
}
