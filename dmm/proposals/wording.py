"""What a memory's wording says about its quality (PRD phase 2, 5.5), read by the quality check:
a sentence that adds a second topic, and a reference to text the memory does not hold.

Both are warnings about how a memory is written, and both are narrow on purpose: measured on
the real stores (shared/eval/real, 407 memories written by people), neither flags one of them.

- A second topic: a sentence opened by "Also", "Additionally", "Furthermore", "Moreover" or
  "In addition" that names nothing the title or any earlier sentence named. A connective
  that goes on about what was said ("Additionally, the matching answer also needs ...") is
  the same concept; one that starts on something new is the second concept of the file.
- A reference to nothing: a reference backwards needs something before it. "As above", "the
  above", "mentioned earlier", "the previous one" in the body's first sentence point at text
  that is not in the memory (the title is not text above); "this approach", "the same fix"
  in the title have nothing before them at all; and the conversation the memory was written
  in ("as we discussed", "the previous session") is never in the store, wherever it is cited.
  "This project", "this repository" point at the place, not at earlier text: they stay.

Pure: text in, findings out.
"""

from __future__ import annotations

import re

from dmm.conflicts.prose import split_sentences, without_code
from dmm.text.analyze import terms

# a connective that adds to what was said; "in addition to X" names what it adds to
ADDITIVE = re.compile(r"^(?:also|additionally|furthermore|moreover|in\s+addition(?!\s+to\b))"
                      r"\b[,:;]?\s*", re.I)
# a new topic names at least this many content words of its own
NEW_TOPIC_TERMS = 2

# references to text before them
_EARLIER = re.compile(
    r"\b(?:as\s+(?:mentioned|noted|said|described|discussed|shown|explained|stated|outlined)\s+"
    r"(?:above|earlier|before|previously)|(?:see|as)\s+above|the\s+above|"
    r"(?:mentioned|described|discussed|listed|shown)\s+(?:above|earlier|previously)|"
    r"the\s+(?:previous|preceding|former|latter)\s+(?:one|ones|section|step|point|example|"
    r"option|approach|rule))\b", re.I)
# something that only the text before can name: "this approach", "the same fix"
_ANAPHOR = re.compile(
    r"\b(?:this|that|these|those|the\s+same|such\s+an?)\s+(?:approach|method|solution|fix|"
    r"workaround|change|option|pattern|technique|trick|idea|one|ones|way)\b", re.I)
# the conversation a memory was written in, which no reader of the store has
_CONVERSATION = re.compile(
    r"\b(?:as\s+(?:we|you|I)\s+(?:discussed|agreed|said|mentioned)(?:\s+(?:earlier|before|"
    r"above|previously))?(?!\s+(?:in|with|at|on|during|when|for)\b)|"
    r"(?:the|our|your|my)\s+(?:previous|last|earlier)\s+(?:conversation|discussion|session|"
    r"chat|message|answer|reply|thread)|(?:you|I)\s+(?:mentioned|said|asked)\s+"
    r"(?:earlier|before|previously))\b", re.I)


def added_topics(title: str, body: str) -> list[str]:
    """Sentences that add a topic nothing before them named (see the module's docstring)."""
    seen = set(terms(title))
    out = []
    for sentence in split_sentences(without_code(body)):
        opener = ADDITIVE.match(sentence)
        said = set(terms(sentence))
        if opener:
            own = set(terms(sentence[opener.end():]))
            if len(own) >= NEW_TOPIC_TERMS and not own & seen:
                out.append(sentence)
        seen |= said
    return out


def undefined_references(title: str, body: str) -> list[str]:
    """The references of a memory to text it does not hold, as written (see the module's
    docstring)."""
    sentences = split_sentences(without_code(body))
    found = [m.group(0) for m in _CONVERSATION.finditer(without_code(body))]
    found += [m.group(0) for m in (*_EARLIER.finditer(title), *_ANAPHOR.finditer(title))]
    if sentences:
        found += [m.group(0) for m in _EARLIER.finditer(sentences[0])]
    return list(dict.fromkeys(found))
