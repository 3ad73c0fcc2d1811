"""The families of alternatives: what a title chooses."""

from __future__ import annotations

from dmm.conflicts.alternatives import FAMILIES, choices, named


def test_every_name_belongs_to_one_member_of_one_family():
    names = [n for fam in FAMILIES.values() for ns in fam.members.values() for n in ns.split("|")]
    assert len(names) == len(set(names))
    assert all(n == n.lower() and n.strip() == n for n in names)


def test_a_title_chooses_the_one_member_it_names():
    assert choices("User passwords are hashed with Argon2id") == {"password hashing": "argon2"}
    assert choices("Lists use cursor-based pagination") == {"pagination": "cursor"}
    assert choices("Persistence goes through SQLAlchemy mapped classes") == {
        "data access": "orm"}
    # naming two members is a comparison or a move, not a choice
    assert choices("Migrate from bcrypt to Argon2id") == {}
    assert named("Migrate from bcrypt to Argon2id") == {"password hashing": {"bcrypt", "argon2"}}


def test_names_match_whole_words_only():
    assert choices("The team reacted quickly to the outage") == {}
    assert choices("Snapshot tests are kept small") == {}
    assert choices("Synchronise the calendars nightly") == {}
    assert choices("Specs live next to the ecs-task-definition files") == {}
    assert choices("Squash merge every pull request") == {"merge strategy": "squash"}
