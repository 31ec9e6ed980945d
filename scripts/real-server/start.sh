#!/usr/bin/env bash
# Start or stop a llama-server on a free loopback port for tests/real_server.rs.
#
# Usage: scripts/real-server/start.sh start NAME BIN MODEL [API_KEY]
#          prints the base URL (http://127.0.0.1:PORT) once /health answers 200;
#          writes $STATE/NAME.pid, $STATE/NAME.url and the server's log $STATE/NAME.log
#        scripts/real-server/start.sh stop NAME
# Env:   LADDER_REAL_SERVER_STATE (default ${TMPDIR:-/tmp}/ladder-real-server),
#        LADDER_REAL_SERVER_LIFETIME (seconds, default 3600: the server is killed after it
#        even when nobody stops it), LADDER_REAL_SERVER_WAIT (seconds for /health, default 180)
# Exit:  0 ok; 30 bad arguments or missing binary/model; 31 the server did not come up.
set -uo pipefail

state="${LADDER_REAL_SERVER_STATE:-${TMPDIR:-/tmp}/ladder-real-server}"
say() { echo "real-server: $*" >&2; }

stop() {
  local pidf="$state/$1.pid" pid
  [[ -f "$pidf" ]] || return 0
  pid="$(cat "$pidf")"
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidf" "$state/$1.url"
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

healthy() {
  python3 - "$1" <<'PY'
import sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/health", timeout=2) as r:
        sys.exit(0 if r.status == 200 else 1)
except Exception:
    sys.exit(1)
PY
}

case "${1:-}" in
  stop)
    [[ $# -eq 2 ]] || { say "usage: $0 stop NAME"; exit 30; }
    stop "$2"
    ;;
  start)
    [[ $# -ge 4 && $# -le 5 ]] || { say "usage: $0 start NAME BIN MODEL [API_KEY]"; exit 30; }
    name="$2" bin="$3" model="$4" key="${5:-}"
    [[ -x "$bin" ]] || { say "no llama-server binary at $bin"; exit 30; }
    [[ -f "$model" ]] || { say "no model file at $model"; exit 30; }
    mkdir -p "$state"
    stop "$name"
    port="$(free_port)" || { say "cannot find a free port"; exit 31; }
    url="http://127.0.0.1:$port"
    args=(-m "$model" --host 127.0.0.1 --port "$port" -t 1 -np 4 -c 8192 --metrics
          --alias smollm2-135m)
    [[ -n "$key" ]] && args+=(--api-key "$key")
    # `timeout` is the watchdog: a server nobody stopped still ends.
    setsid timeout "${LADDER_REAL_SERVER_LIFETIME:-3600}" "$bin" "${args[@]}" \
      >"$state/$name.log" 2>&1 </dev/null &
    echo $! >"$state/$name.pid"
    wait_s="${LADDER_REAL_SERVER_WAIT:-180}"
    for _ in $(seq $((wait_s * 2))); do
      if healthy "$url"; then
        echo "$url" >"$state/$name.url"
        echo "$url"
        exit 0
      fi
      kill -0 "$(cat "$state/$name.pid")" 2>/dev/null || break
      sleep 0.5
    done
    say "llama-server ($name) did not answer $url/health within ${wait_s}s; last log lines:"
    tail -n 20 "$state/$name.log" >&2
    stop "$name"
    exit 31
    ;;
  *)
    say "usage: $0 start NAME BIN MODEL [API_KEY] | stop NAME"
    exit 30
    ;;
esac
