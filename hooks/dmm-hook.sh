#!/bin/sh
# dmm-hook: @HOOK@ -- installed by `dmm hooks install`, removed by `dmm hooks uninstall`.
# Runs dmm's incremental conflict scan after git changed memory files. It never blocks or
# breaks the git command: every failure is reported on stderr and the hook exits 0.
hook_dir=$(dirname "$0")
legacy="$hook_dir/@HOOK@.legacy"
status=0
# The hook that was here before dmm keeps running first, with the same input, unless it is a
# dmm shim itself: the pre-commit framework also renames an existing hook to <hook>.legacy
# and runs it from there, and a shim that called itself would recurse until fork fails.
if [ "$(basename "$0")" != "@HOOK@.legacy" ] && [ -x "$legacy" ] \
        && ! grep -q '^# dmm-hook:' "$legacy" 2>/dev/null; then
    if [ "@HOOK@" = "post-rewrite" ]; then
        input=$(cat)
        printf '%s\n' "$input" | "$legacy" "$@" || status=$?
    else
        "$legacy" "$@" || status=$?
    fi
fi
# Cheap test in shell, before starting Python: did memory files change?
case "@HOOK@" in
    post-commit) base="HEAD^" ;;
    *) base="ORIG_HEAD" ;;
esac
if git rev-parse -q --verify "$base" >/dev/null 2>&1; then
    changed=$(git diff --name-only "$base" HEAD -- .dmm/memory 2>/dev/null)
else
    changed=$(git diff-tree --root --no-commit-id --name-only -r HEAD -- .dmm/memory 2>/dev/null)
fi
[ -n "$changed" ] || exit $status
# Never let git's hook environment leak into dmm (GIT_INDEX_FILE is relative in hooks).
unset GIT_INDEX_FILE
# The installed dmm, never code from this repository: a branch can carry a dmm/ package or a
# dmm script, and `python -m dmm` run from here would import it. So: the console script that
# installed this hook, else the one on PATH (refused when it lies inside this work tree).
dmm_cmd=
if [ -n "$DMM_HOOK_COMMAND" ]; then
    dmm_cmd=$DMM_HOOK_COMMAND
elif [ -n @DMM@ ] && [ -x @DMM@ ]; then
    dmm_cmd=@DMM@
else
    found=$(command -v dmm 2>/dev/null)
    case "$found" in
        /*) # compared physically: a PATH entry may reach the work tree through a link
            found_dir=$(cd "$(dirname "$found")" 2>/dev/null && pwd -P)
            if [ -n "$found_dir" ]; then
                case "$found_dir/" in "$(pwd -P)"/*) ;; *) dmm_cmd=$found ;; esac
            fi ;;
    esac
fi
if [ -z "$dmm_cmd" ]; then
    echo "dmm: the conflict scan was skipped: dmm is not installed on PATH (or set DMM_HOOK_COMMAND)" >&2
    exit $status
fi
"$dmm_cmd" hooks run @HOOK@ || echo "dmm: the conflict scan failed (see above); run 'dmm conflicts scan' by hand" >&2
exit $status
