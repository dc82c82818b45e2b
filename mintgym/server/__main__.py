"""``python -m mintgym.server DOMAIN [--host H] [--port P] [--fd N] [--parent-pid PID] [--token-file F]``.

The token comes from ``$MINTGYM_TOKEN`` or ``--token-file``, never from the command line.
"""

from __future__ import annotations

import argparse
import json

from mintgym.server.serve import serve


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m mintgym.server", description="Run a MintGym env server.",
                                     allow_abbrev=False)
    parser.add_argument("domain")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--fd", type=int, default=None)
    parser.add_argument("--parent-pid", type=int, default=None)
    parser.add_argument("--token-file", default=None, help="a file holding the bearer token (mode 600)")
    parser.add_argument("--request-timeout", type=float, default=60.0)
    parser.add_argument("--max-sessions", type=int, default=1024)
    parser.add_argument("--body-timeout", type=float, default=30.0,
                        help="seconds a request body may stall between chunks before it gets a 408")
    parser.add_argument("--host-options", default="{}", help="JSON object passed to the environment host")
    parser.add_argument("--max-option", action="append", default=[], metavar="NAME=VALUE",
                        help="cap a numeric session option (repeatable)")
    parser.add_argument("--log-level", default="warning")
    args, unknown = parser.parse_known_args()
    if any(u == "--token" or u.startswith("--token=") for u in unknown):
        parser.error("--token is not accepted: a command line is visible to every local user (ps); "
                     "set MINTGYM_TOKEN or pass --token-file")
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    serve(args.domain, args.host, args.port, token_file=args.token_file, fd=args.fd, parent_pid=args.parent_pid,
          request_timeout=args.request_timeout, max_sessions=args.max_sessions,
          host_options=json.loads(args.host_options), option_caps=args.max_option, body_timeout=args.body_timeout,
          log_level=args.log_level)


if __name__ == "__main__":
    main()
