"""Shell completion (click's API): commands, options and the values commands take, from a real
store with real proposals and conflicts."""

from __future__ import annotations

from tests.conflicts.test_resolution import BEANSTALK, OLD_LIMIT, cid, store  # noqa: F401


def complete(repo, line: str) -> list[str]:
    """What bash completion offers for the last word of ``line``."""
    words = line.split(" ")
    proc = repo.dmm(env={"_DMM_COMPLETE": "bash_complete", "COMP_WORDS": line,
                         "COMP_CWORD": str(len(words) - 1)})
    assert proc.returncode == 0, proc.stderr
    return [item.split(",", 1)[1] for item in proc.stdout.splitlines() if item]


def test_commands_and_options(store):
    assert "conflicts" in complete(store, "dmm con")
    assert "--status" in complete(store, "dmm conflicts list --st")


def test_memory_ids_and_paths(store):
    assert complete(store, "dmm show mem_2025_02") == [BEANSTALK]
    assert complete(store, "dmm write deprecate --path project/jobs/b") == [
        "project/jobs/beanstalk.md"]
    # a list of memories completes its last item
    assert f"{OLD_LIMIT},{BEANSTALK}" in complete(
        store, f"dmm conflicts flag --memories {OLD_LIMIT},mem_2025_02")


def test_conflict_and_proposal_ids(store):
    conflict = cid(store, BEANSTALK, "mem_2026_01_10_001")
    assert conflict in complete(store, "dmm conflicts show conflict_")
    proposed = store.dmm("write", "deprecate", "--path", "project/jobs/beanstalk.md",
                         "--reason", "moved to SQS")
    assert proposed.returncode == 0, proposed.stderr
    pid = proposed.stdout.strip()
    assert complete(store, "dmm review show ") == [pid]
    assert complete(store, "dmm review process ") == [pid]


def test_outside_a_store_completion_offers_nothing_and_never_fails(tmp_path):
    class Nowhere:
        def dmm(self, *args, env=None):
            from tests.conftest import run_dmm

            return run_dmm(*args, cwd=tmp_path, env=env)

    assert complete(Nowhere(), "dmm show mem") == []
