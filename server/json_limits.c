/* json_limits.c: counting a JSON text's values before parsing it (json_limits.h) */
#include "json_limits.h"

bool
json_values_within(const char *text, size_t len, size_t max_values)
{
	size_t		values = 1;
	bool		in_string = false;

	for (size_t i = 0; i < len; i++)
	{
		char		c = text[i];

		if (in_string)
		{
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			continue;
		}
		/* a value follows each of these */
		if (c == '"')
			in_string = true;
		else if (c == ',' || c == ':' || c == '[' || c == '{')
		{
			if (++values > max_values)
				return false;
		}
	}
	return true;
}
