"""Docker HEALTHCHECK: exit 0 when the env server in this container answers GET /v1/health with 200."""

import os
import sys
import urllib.request

port = os.environ.get("MINTGYM_PORT", "8000")
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
try:
    with opener.open(f"http://127.0.0.1:{port}/v1/health", timeout=3) as resp:
        sys.exit(0 if resp.status == 200 else 1)
except OSError as err:
    print(f"health check failed: {err}", file=sys.stderr)
    sys.exit(1)
