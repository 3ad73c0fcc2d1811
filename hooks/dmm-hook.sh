#!/bin/sh
# dmm-hook: @HOOK@ -- installed by `dmm hooks install`, removed by `dmm hooks uninstall`.
# Runs dmm's incremental conflict scan after git changed memory files. It never blocks or
# breaks the git command: every failure is reported on stderr and the hook exits 0.
hook_dir=$(dirname "$0")
legacy="$hook_dir/@HOOK@.legacy"
status=0
if [ -x "$legacy" ]; then
    # the hook that was here before dmm keeps running first, with the same input
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
${DMM_HOOK_COMMAND:-@DMM@} hooks run @HOOK@ || echo "dmm: the conflict scan failed (see above); run 'dmm conflicts scan' by hand" >&2
exit $status
