#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package end to end, as root, without touching this machine's
# own dpkg database or systemd:
#   1. configure a tree with prefix /usr (as a packager would) and build it
#      (or reuse DW_PACKAGE_BUILD_DIR), then `cpack -G DEB` twice: an older
#      version (<version>~old) and the current one;
#   2. check the name, contents, conffiles and computed Depends, and that
#      lintian reports no error and no warning;
#   3. in a fresh dpkg root (dpkg --root, maintainer scripts run chrootless
#      with DPKG_ROOT set): install the old package, check the files, the
#      enablement symlink and `systemd-analyze verify --root`; put a history
#      file and a retention study in /var/lib/drivewatch and edit the
#      conffile; upgrade; check both byte-identical; remove (config and
#      state stay); purge (both go);
#   4. run the maintainer scripts against stub systemctl/deb-systemd-* to
#      check that an install does not start the daemon, an upgrade restarts
#      it (try-restart) and a removal stops it;
#   5. `apt-get install --simulate ./drivewatch_*.deb`: the dependencies
#      resolve on this Debian 12.
#   usage: package_test.sh SOURCE_DIR WORK_DIR
set -euo pipefail
src=$(realpath "$1")
work=$2
mkdir -p "$work"
work=$(realpath "$work")
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# ---------------------------------------------------------------- 1. build
build=${DW_PACKAGE_BUILD_DIR:-$work/build}
# With ccache (scripts/ccache.sh) this tree reuses the main build's objects:
# same sources, same flags, the same generator, and a tree at the same depth
# below the sources (packaging/CMakeLists.txt sets DW_PACKAGE_GENERATOR and
# DW_PACKAGE_BUILD_DIR=<main tree>-package).
source "$src/scripts/ccache.sh"
dw_ccache "$src"
ccache_before=$(ccache --print-stats 2>/dev/null || true)
generator=()
[[ -n ${DW_PACKAGE_GENERATOR:-} && ! -f $build/CMakeCache.txt ]] && generator=(-G "$DW_PACKAGE_GENERATOR")
cmake -S "$src" -B "$build" "${generator[@]}" "${DW_CCACHE_ARGS[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc \
  -DDRIVEWATCH_BUILD_TESTS=OFF -UDRIVEWATCH_PACKAGE_VERSION >/dev/null
cmake --build "$build" -j"$(nproc)" --target drivewatch man >"$work/build.log" 2>&1 \
  || { tail -50 "$work/build.log" >&2; fail "build"; }
if [[ -n $ccache_before ]]; then
  # Says whether the reuse worked: a cold cache compiles everything.
  ccache --print-stats | python3 -c '
import sys
def stats(text):
    return {k: int(v) for k, v in (l.split("\t") for l in text.splitlines() if "\t" in l)}
before, after = stats(sys.argv[1]), stats(sys.stdin.read())
d = {k: after.get(k, 0) - before.get(k, 0) for k in after}
hits = d.get("direct_cache_hit", 0) + d.get("preprocessed_cache_hit", 0)
misses = d.get("cache_miss", 0)
print(f"ok: ccache: {hits} of {hits + misses} compilations reused")' "$ccache_before" || true
fi
version=$("$build/exporter/drivewatch" --version | awk 'NR==1 {print $2}')
[[ -n $version ]] || fail "no version from drivewatch --version"
old_version="$version~old"
deb_dir=$work/debs
rm -rf "$deb_dir" && mkdir -p "$deb_dir/old" "$deb_dir/new"
trap 'cmake -S "$src" -B "$build" -UDRIVEWATCH_PACKAGE_VERSION >/dev/null 2>&1 || true' EXIT
cmake -S "$src" -B "$build" -DDRIVEWATCH_PACKAGE_VERSION="$old_version" >/dev/null
(cd "$build" && cpack -G DEB -B "$deb_dir/old" >"$work/cpack-old.log" 2>&1) || { cat "$work/cpack-old.log" >&2; fail cpack; }
cmake -S "$src" -B "$build" -UDRIVEWATCH_PACKAGE_VERSION >/dev/null
(cd "$build" && cpack -G DEB -B "$deb_dir/new" >"$work/cpack-new.log" 2>&1) || { cat "$work/cpack-new.log" >&2; fail cpack; }
old_deb=$deb_dir/old/drivewatch_${old_version}_amd64.deb
new_deb=$deb_dir/new/drivewatch_${version}_amd64.deb
[[ -f $old_deb && -f $new_deb ]] || { ls -R "$deb_dir" >&2; fail "cpack did not write drivewatch_<version>_amd64.deb"; }
ok "cpack built $(basename "$old_deb") and $(basename "$new_deb")"

# ------------------------------------------------------- 2. contents, lint
contents=$(dpkg-deb -c "$new_deb" | awk '{print $6}' | sed 's|^\./|/|')
expected=(
  /usr/bin/drivewatch
  /usr/lib/systemd/system/drivewatch.service
  /etc/drivewatch/drivewatch.toml
  /usr/share/man/man1/drivewatch.1.gz
  /usr/share/man/man5/drivewatch.toml.5.gz
  /usr/share/doc/drivewatch/copyright
  /usr/share/doc/drivewatch/changelog.gz
  /usr/share/doc/drivewatch/README.md
  /usr/share/doc/drivewatch/metrics.md
  /usr/share/drivewatch/rules/drivewatch-smartd.rules.yml
)
for f in "${expected[@]}"; do
  grep -qx -- "$f" <<<"$contents" || fail "$f is not in the package"
done
if grep -E '^/(usr/etc|usr/local|var/lib/drivewatch)' <<<"$contents"; then
  fail "the package ships files under /usr/etc, /usr/local or the state directory"
fi
conffiles=$(dpkg-deb --ctrl-tarfile "$new_deb" | tar -xOf - ./conffiles)
grep -qx /etc/drivewatch/drivewatch.toml <<<"$conffiles" \
  || fail "/etc/drivewatch/drivewatch.toml is not a conffile"
depends=$(dpkg-deb -f "$new_deb" Depends)
# The libraries the binary really calls at run time. The metric store is
# prometheus-cpp's (families serialized by its TextSerializer), so
# dpkg-shlibdeps must list libprometheus-cpp-core. The HTTP server is
# Boost.Beast, header-only: it adds zlib (gzip) and OpenSSL, and cpp-httplib
# is only the tests' client. libyaml reads the web config.
for lib in libc6 libnvme1 liburing2 libtomlplusplus3 libssl3 zlib1g libprometheus-cpp-core \
  libyaml-0-2; do
  grep -q "$lib" <<<"$depends" || fail "Depends lacks $lib (dpkg-shlibdeps): $depends"
done
! grep -q libcpp-httplib <<<"$depends" || fail "Depends lists cpp-httplib, which the binary does not use: $depends"
# The header-only libraries compiled in (Boost, nlohmann-json, CLI11) add
# no Depends; CLI11's BSD-3-Clause licence asks for its notice in the
# package's documentation.
copyright=$(dpkg-deb --fsys-tarfile "$new_deb" | tar -xOf - ./usr/share/doc/drivewatch/copyright)
grep -q "CLI11 (libcli11-dev)" <<<"$copyright" && grep -q "Henry Schreiner" <<<"$copyright" \
  || fail "the copyright file lacks CLI11's notice"
ok "contents, conffiles and computed Depends: $depends"

lint=$(lintian --pedantic -I "$new_deb" 2>/dev/null || true)
echo "$lint" | sed 's/^/  lintian: /'
if grep -E '^[EW]: ' <<<"$lint"; then
  fail "lintian reports errors or warnings"
fi
ok "lintian: no errors, no warnings"

# ------------------------------------------------- 3. a fresh dpkg root
root=$work/root
rm -rf "$root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
# Chrootless: the maintainer scripts run from this machine's /bin/sh with
# DPKG_ROOT=$root; they honour it (deb-systemd-helper acts inside $root and
# nothing talks to this machine's systemd). The root has no libc etc. in its
# database, hence --force-depends; the daemon never runs from it.
dpkg_root() {
  dpkg --root="$root" --log="$work/dpkg.log" --force-script-chrootless \
    --force-depends "$@" </dev/null
}
pkg_status() { dpkg-query --root="$root" -W -f='${db:Status-Abbrev}${Version}' drivewatch 2>/dev/null || true; }

dpkg_root -i "$old_deb" >"$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "dpkg -i of the old package"; }
[[ $(pkg_status) == "ii $old_version" ]] || fail "after install: status '$(pkg_status)'"
for f in "${expected[@]}"; do
  [[ -e $root$f ]] || fail "$f was not installed"
done
unit=$root/usr/lib/systemd/system/drivewatch.service
grep -qx 'ExecStart=/usr/bin/drivewatch --config.file=/etc/drivewatch/drivewatch.toml' "$unit" \
  || fail "ExecStart: $(grep ExecStart "$unit")"
link=$root/etc/systemd/system/multi-user.target.wants/drivewatch.service
[[ -L $link && $(readlink "$link") == /usr/lib/systemd/system/drivewatch.service ]] \
  || fail "postinst did not enable the unit (no $link)"
"$root/usr/bin/drivewatch" check-config "$root/etc/drivewatch/drivewatch.toml" >/dev/null \
  || fail "the installed binary rejects the installed config"
# systemd-analyze verify --root would need systemd's own units in the root;
# verify the installed unit against this machine's systemd instead, with
# ExecStart pointing at the binary installed in the root.
mkdir -p "$work/verify"
sed "s|^ExecStart=/usr/bin/drivewatch |ExecStart=$root/usr/bin/drivewatch |" "$unit" >"$work/verify/drivewatch.service"
# verify runs man(1) on the unit's Documentation= man: links.
out=$(MANPATH=$root/usr/share/man systemd-analyze verify "$work/verify/drivewatch.service" 2>&1) || fail "systemd-analyze verify: $out"
[[ -z $out ]] || fail "systemd-analyze verify printed: $out"
ok "fresh root: files in place, unit enabled (multi-user.target.wants), systemd-analyze verify clean"

# State and an edited config, as a running daemon and its admin leave them.
state=$root/var/lib/drivewatch
mkdir -p "$state/retention"
chmod 0750 "$state"
head -c 65536 /dev/urandom | base64 >"$state/history.log"
printf '{"study":"s1","blocks":[1,2,3]}\n' >"$state/retention/s1.json"
echo '# edited by the administrator' >>"$root/etc/drivewatch/drivewatch.toml"
before=$(cd "$root" && find var/lib/drivewatch etc/drivewatch -type f -print0 | sort -z | xargs -0 sha256sum)
mode_before=$(stat -c %a "$state")

dpkg_root -i "$new_deb" >"$work/upgrade.log" 2>&1 || { cat "$work/upgrade.log" >&2; fail "dpkg -i upgrade"; }
[[ $(pkg_status) == "ii $version" ]] || fail "after upgrade: status '$(pkg_status)'"
after=$(cd "$root" && find var/lib/drivewatch etc/drivewatch -type f -print0 | sort -z | xargs -0 sha256sum)
[[ $before == "$after" ]] || { diff <(echo "$before") <(echo "$after") >&2; fail "the upgrade changed the state directory or the edited config"; }
[[ $(stat -c %a "$state") == "$mode_before" ]] || fail "the upgrade changed the state directory's mode"
[[ -L $link ]] || fail "the upgrade dropped the enablement symlink"
ok "upgrade $old_version -> $version: history.log, retention/ and the edited conffile byte-identical"

dpkg_root -r drivewatch >"$work/remove.log" 2>&1 || { cat "$work/remove.log" >&2; fail "dpkg -r"; }
[[ $(pkg_status) == "rc $version" ]] || fail "after remove: status '$(pkg_status)'"
[[ ! -e $root/usr/bin/drivewatch && ! -e $unit ]] || fail "remove left the binary or the unit"
after=$(cd "$root" && find var/lib/drivewatch etc/drivewatch -type f -print0 | sort -z | xargs -0 sha256sum)
[[ $before == "$after" ]] || fail "remove touched the config or the state directory"
ok "remove: binary and unit gone; config and state untouched"

dpkg_root -P drivewatch >"$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "dpkg -P"; }
[[ -z $(pkg_status) || $(pkg_status) == "pn"* ]] || fail "after purge: status '$(pkg_status)'"
for gone in /etc/drivewatch /var/lib/drivewatch /etc/systemd/system/multi-user.target.wants/drivewatch.service \
            /etc/systemd/system/drivewatch.service /usr/share/doc/drivewatch; do
  [[ ! -e $root$gone && ! -L $root$gone ]] || fail "purge left $gone"
done
ok "purge: config, state directory and enablement gone"

# ---------------------------------- 4. maintainer scripts against systemd
ctrl=$work/control
rm -rf "$ctrl" && dpkg-deb -e "$new_deb" "$ctrl"
stubs=$work/stubs
rm -rf "$stubs" && mkdir -p "$stubs/bin" "$stubs/run-systemd-system"
for tool in systemctl deb-systemd-helper deb-systemd-invoke; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\nexit 0\n' "$tool" "$stubs" >"$stubs/bin/$tool"
  chmod +x "$stubs/bin/$tool"
done
# The scripts as shipped, but seeing a "running systemd" at a stub path.
for s in postinst prerm postrm; do
  sed "s|/run/systemd/system|$stubs/run-systemd-system|g" "$ctrl/$s" >"$stubs/$s"
  chmod +x "$stubs/$s"
done
run() { : >"$stubs/calls"; env -u DPKG_ROOT PATH="$stubs/bin:$PATH" "$stubs/$1" "${@:2}"; cat "$stubs/calls"; }
calls=$(run postinst configure)
grep -q 'deb-systemd-helper enable drivewatch.service' <<<"$calls" || fail "install: not enabled: $calls"
grep -qE 'deb-systemd-invoke|systemctl .*(start|restart)' <<<"$calls" && fail "install starts the daemon: $calls"
calls=$(run postinst configure "$old_version")
grep -qx 'deb-systemd-invoke try-restart drivewatch.service' <<<"$calls" || fail "upgrade: no restart: $calls"
calls=$(run prerm upgrade "$version")
grep -q stop <<<"$calls" && fail "upgrade: prerm stops the daemon: $calls"
calls=$(run prerm remove)
grep -qx 'deb-systemd-invoke stop drivewatch.service' <<<"$calls" || fail "remove: no stop: $calls"
ok "maintainer scripts: install enables without starting, upgrade try-restarts, remove stops"

# -------------------------------------------- 5. apt can install it here
if apt-get install --simulate -o Debug::NoLocking=1 "$new_deb" >"$work/apt.log" 2>&1; then
  ok "apt-get install --simulate $(basename "$new_deb"): dependencies resolve"
else
  cat "$work/apt.log" >&2
  fail "apt-get install --simulate ./$(basename "$new_deb")"
fi
