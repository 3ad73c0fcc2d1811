"""The quality check's reading of wording (issue 37 item 9, PRD phase 2 5.5): "Also" that starts
a second topic, and references to text the memory does not hold. Warnings, never rejections;
the pure rules first, then the reviewer on a real proposal."""

from __future__ import annotations

import json

from dmm.proposals.wording import added_topics, undefined_references
from tests.conftest import git

TITLE = "Deploys to production go through the release pipeline"
ONE = ("Production deploys run from the release pipeline after the smoke tests pass, because a "
       "deploy from a laptop skipped the migrations check twice last year.")


def test_an_additive_sentence_that_starts_on_something_new_is_a_second_topic():
    second = ONE + (" Also, the staging database is restored nightly from anonymised "
                    "backups.")
    assert added_topics(TITLE, second) == ["Also, the staging database is restored nightly "
                                           "from anonymised backups."]
    for opener in ("Additionally,", "Furthermore,", "Moreover,", "In addition,"):
        assert added_topics(TITLE, f"{ONE}\n\n{opener} office plants are watered on "
                                   "Mondays."), opener


def test_an_additive_sentence_about_what_was_said_is_the_same_concept():
    for more in ("Also, a deploy needs a green pipeline on the release branch.",
                 "Additionally, the smoke tests must finish within ten minutes.",
                 "Furthermore, laptops cannot reach production credentials.",
                 "In addition to the smoke tests, a person watches the dashboards.",
                 "Also see [the runbook](runbook.md)."):  # a pointer, no topic of its own
        assert added_topics(TITLE, f"{ONE} {more}") == [], more
    # the word inside a sentence is not an opener
    assert added_topics(TITLE, ONE + " We also page the on-call engineer about office "
                                     "plants.") == []
    # in a code block, nothing is prose
    assert added_topics(TITLE, ONE + "\n\n```\nAlso, office plants are watered\n```\n") == []


def test_a_reference_to_text_before_it_needs_text_before_it():
    assert undefined_references(TITLE, "As mentioned above, deploys use the pipeline. "
                                       + ONE) == ["As mentioned above"]
    assert undefined_references(TITLE, "The previous one broke staging. " + ONE) == [
        "The previous one"]
    assert undefined_references("This approach is faster", ONE) == ["This approach"]
    # with the text before it in the memory, the same words are defined
    assert undefined_references(TITLE, ONE + " As mentioned above, the pipeline deploys. "
                                             "The previous one broke staging.") == []
    # the title a body follows is what "this approach" refers to
    assert undefined_references(TITLE, "This approach keeps the migrations check. " + ONE) == []
    # "this project" points at the place, not at earlier text
    assert undefined_references("This project deploys on Tuesdays", ONE) == []


def test_the_conversation_a_memory_came_from_is_never_in_the_store():
    for said in ("As we discussed, deploys wait for the smoke tests.",
                 "We keep the rule from our previous conversation.",
                 "You mentioned earlier that laptops cannot deploy."):
        assert undefined_references(TITLE, ONE + " " + said), said
    assert undefined_references(TITLE, ONE + " As agreed in the March incident review, "
                                             "laptops cannot deploy.") == []
    assert undefined_references(TITLE, ONE + " As we discussed in the incident review, "
                                             "laptops cannot deploy.") == []


BODY = ("Production deploys run from the release pipeline after the smoke tests and the "
        "migration check pass; the pipeline tags the release and posts the changelog to the "
        "team channel. Why: a deploy from a laptop skipped the migrations check twice last "
        "year, and each time the site was down for an hour while someone rolled it back by "
        "hand. The pipeline is the only place that holds the production credentials, so a "
        "deploy that does not go through it cannot reach production at all.")


def test_the_reviewer_warns_and_does_not_reject(repo):
    git(repo.root, "add", "-A")
    git(repo.root, "commit", "-qm", "dmm")
    text = ("---\ntags: [deploy]\npriority: 0.6\nconfidence: active\n---\n\n"
            f"# {TITLE}\n\nAs mentioned above, this is the rule. {BODY}\n\nAlso, the office "
            "coffee machine is descaled every Friday by whoever arrives first.\n")
    proc = repo.dmm("write", "propose", "--path", "project/deploys.md", "--reason", "r",
                    "--json", input=text)
    assert proc.returncode == 0, proc.stderr
    pid = json.loads(proc.stdout)["proposal_id"]
    review = json.loads(repo.dmm("review", "process", pid, "--dry-run", "--json").stdout)
    quality = {i["message"]: i for i in review["issues"] if i["category"] == "quality"}
    second = [m for m in quality if m.startswith("looks like more than one concept")]
    loose = [m for m in quality if m.startswith("not self-contained")]
    assert second and "coffee machine" in second[0], quality
    assert loose and "'As mentioned above'" in loose[0], quality
    assert all(quality[m]["severity"] == "warning" and not quality[m]["required"]
               for m in second + loose)
    assert review["decision"] != "rejected", review
