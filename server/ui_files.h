/*
 * The web UI's built files (web/, `make web`), served from --web-root to
 * GET and HEAD: `/` is index.html; no credentials needed, as they hold no
 * data (the API does).
 */
#ifndef SERVER_UI_FILES_H
#define SERVER_UI_FILES_H

#include <microhttpd.h>

/* queues the answer to url; *status gets the HTTP status sent */
enum MHD_Result ui_files_answer(struct MHD_Connection *conn, const char *web_root, const char *url,
								const char *method, int *status);

#endif
