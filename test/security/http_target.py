#!/usr/bin/env python3
"""A scrape target for test/security/run.sh.

    http_target.py PORT PPROF BOMB OTHER_PORT LOG

Serves, on 127.0.0.1:PORT, for any path under
    /good/...            the pprof file PPROF
    /bomb/...            the file BOMB
    /redirect_same/...   a redirect to /good/... on this server
    /redirect_other/...  a redirect to /good/... on 127.0.0.1:OTHER_PORT
and appends each request's path to LOG.
"""
import http.server
import sys

port, pprof, bomb, other_port, log = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(log, "a") as f:
            f.write(self.path + "\n")
        prefix, _, rest = self.path.lstrip("/").partition("/")
        if prefix in ("good", "bomb"):
            with open(pprof if prefix == "good" else bomb, "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif prefix == "redirect_same":
            self.send_response(302)
            self.send_header("Location", "/good/" + rest)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif prefix == "redirect_other":
            self.send_response(302)
            self.send_header("Location", "http://127.0.0.1:%d/good/%s" % (other_port, rest))
            self.send_header("Content-Length", "0")
            self.end_headers()
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
