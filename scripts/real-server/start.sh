#!/usr/bin/env bash
# Start or stop a llama-server on a loopback port for tests/real_server.rs and for the gate's
# calibration on the real server (scripts/bench/calibrate_real.py).
#
# Usage: scripts/real-server/start.sh start [--port P] NAME BIN MODEL [API_KEY] [-- SERVER_ARGS...]
#          prints the base URL (http://127.0.0.1:PORT) once /health answers 200;
#          writes $STATE/NAME.pid, $STATE/NAME.url and the server's log $STATE/NAME.log.
#          A server already running under NAME is stopped first (so `start` again restarts it).
#          The server runs as `-m MODEL --host 127.0.0.1 --port PORT -t 1 -np 4 -c 8192
#          --metrics --alias smollm2-135m [--api-key API_KEY] SERVER_ARGS...`: SERVER_ARGS come
#          last and llama-server takes the last value of a repeated flag, so `-- -np 1 -t 2`
#          serves one slot on two threads. Give API_KEY as "" for SERVER_ARGS without a key.
#          PORT is a free port, or P (--port, else $LADDER_REAL_SERVER_PORT) when set, so a
#          restarted server keeps its URL; a fixed port something already listens on is
#          refused (exit 31).
#        scripts/real-server/start.sh stop NAME
# Env:   LADDER_REAL_SERVER_STATE (default ${TMPDIR:-/tmp}/ladder-real-server),
#        LADDER_REAL_SERVER_PORT (a fixed port; default: a free one; --port wins),
#        LADDER_REAL_SERVER_LIFETIME (seconds, default 3600: the server is killed after it
#        even when nobody stops it), LADDER_REAL_SERVER_WAIT (seconds for /health, default 180)
# Exit:  0 ok; 30 bad arguments or missing binary/model; 31 the server did not come up, or
#        its fixed port is taken.
set -uo pipefail

state="${LADDER_REAL_SERVER_STATE:-${TMPDIR:-/tmp}/ladder-real-server}"
say() { echo "real-server: $*" >&2; }
usage="usage: $0 start [--port P] NAME BIN MODEL [API_KEY] [-- SERVER_ARGS...] | stop NAME"

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

# Whether nothing listens on 127.0.0.1:$1. With SO_REUSEADDR, as the server binds: a port whose
# stopped server left connections in TIME_WAIT is free again at once (a restart on a fixed port).
port_free() {
  python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$1"
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
    shift
    port="${LADDER_REAL_SERVER_PORT:-}"
    if [[ "${1:-}" == --port ]]; then
      [[ $# -ge 2 ]] || { say "--port needs a port number; $usage"; exit 30; }
      port="$2"
      shift 2
    fi
    if [[ -n "$port" ]] && { [[ ! "$port" =~ ^[0-9]{1,5}$ ]] || (( port < 1 || port > 65535 )); }; then
      say "bad port '$port' (--port or LADDER_REAL_SERVER_PORT): give a number from 1 to 65535"
      exit 30
    fi
    [[ $# -ge 3 ]] || { say "$usage"; exit 30; }
    name="$1" bin="$2" model="$3" key=""
    shift 3
    if [[ $# -gt 0 && "$1" != -- ]]; then key="$1"; shift; fi
    if [[ $# -gt 0 ]]; then
      [[ "$1" == -- ]] || { say "unexpected argument '$1' (server arguments go after --); $usage"; exit 30; }
      shift
    fi
    extra=("$@")
    for a in "${extra[@]}"; do
      case "$a" in
        --port|--host|-m|--model)
          say "SERVER_ARGS may not set $a: the script sets it (a fixed port: --port P)"; exit 30 ;;
      esac
    done
    [[ -x "$bin" ]] || { say "no llama-server binary at $bin"; exit 30; }
    [[ -f "$model" ]] || { say "no model file at $model"; exit 30; }
    mkdir -p "$state"
    stop "$name"
    if [[ -z "$port" ]]; then
      port="$(free_port)" || { say "cannot find a free port"; exit 31; }
    elif ! port_free "$port"; then
      say "port $port is taken (another server?): stop what listens there, or pick another --port / LADDER_REAL_SERVER_PORT"
      exit 31
    fi
    url="http://127.0.0.1:$port"
    args=(-m "$model" --host 127.0.0.1 --port "$port" -t 1 -np 4 -c 8192 --metrics
          --alias smollm2-135m)
    [[ -n "$key" ]] && args+=(--api-key "$key")
    args+=("${extra[@]}")
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
    say "$usage"
    exit 30
    ;;
esac
