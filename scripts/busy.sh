#!/usr/bin/env bash
# Run a command beside busy-looping processes (`make test-busy`): a test that passes only
# when the machine is idle waits for time, not for an event, and fails here.
#   scripts/busy.sh make test-all
#   HOGS=4 scripts/busy.sh .venv/bin/python -m pytest tests/test_serve_hostile.py
# HOGS (default 2) loops run for as long as the command does, and are killed when this
# script ends, however it ends (the command's end, an error, Ctrl-C, SIGTERM); a loop also
# ends by itself once this script is gone (killed with SIGKILL).
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: HOGS=N $0 COMMAND [ARGS...]" >&2; exit 2; }
hogs=${HOGS:-2}
pids=()

stop_hogs() {
    [ ${#pids[@]} -eq 0 ] || { kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; }
}
trap stop_hogs EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq "$hogs"); do
    (while kill -0 "$$" 2>/dev/null; do :; done) &
    pids+=($!)
done
echo "busy: $hogs busy loops beside '$*'; $(uptime)"
started=$SECONDS
"$@"
status=$?
echo "busy: '$*' exited $status after $((SECONDS - started)) s beside $hogs busy loops; $(uptime)"
exit $status
