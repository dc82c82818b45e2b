#!/bin/sh
# Boot the emulator headless, wait until Android reports boot completed, then start the env server.
set -eu
emulator -avd mintgym -no-window -no-audio -no-boot-anim -no-snapshot-save -gpu swiftshader_indirect \
    -accel "${MINTGYM_EMULATOR_ACCEL:-auto}" >/tmp/emulator.log 2>&1 &
adb wait-for-device
until [ "$(adb shell getprop sys.boot_completed 2>/dev/null | tr -d '\r')" = "1" ]; do sleep 2; done
exec /usr/local/lib/mintgym/entrypoint.sh "$@"
