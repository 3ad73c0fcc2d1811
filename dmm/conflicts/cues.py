"""Cues a sentence is read for: what it forbids (prohibitions, in English, German, Spanish and
Chinese; CJK has no word boundaries, so Chinese cues are plain substrings), whether it records a
change as done, whether it is a directive, and the code a memory's point names.

Pure: text in, findings out.
"""

from __future__ import annotations

import re

from dmm.text.analyze import terms

# A change recorded as done: a verb of change in the past ("moved", "was upgraded", "took
# over"), "no longer", or a noun of change said to have happened ("the migration is complete",
# "after the reorganisation"). "Upgrade the project to ..." (an instruction), "Migration
# guide" (a how-to) and "a breaking change may occur" record nothing.
CHANGED = re.compile(
    r"\b(moved|migrated|switched|replaced|replaces|upgraded|bumped|took over|taken over|"
    r"takes over|handed over|handed to|no longer|retired|switched off|turned off|shut down|"
    r"converted|ported|renamed|"
    r"decommissioned|dissolved|(?:has|have|was|were) been (?:deleted|removed|dropped)|"
    r"umgestellt|ersetzt|migriert|abgelöst|migramos|migrado|reemplazad[oa]s?|"
    r"sustituid[oa]s?)\b|已迁移|迁移到|改为|已替换|替换为|已升级|升级到|不再", re.I)
_CHANGE_NOUN = r"(?:migration|upgrade|reorg|reorganisation|reorganization|switchover|cutover)"
CHANGE_DONE = re.compile(
    rf"\b{_CHANGE_NOUN}\b.*\b(?:is|was|has been)\s+(?:complete|completed|finished|done)\b|"
    rf"\b(?:after|since|following)\s+the\s+(?:[\w-]+\s+){{0,3}}{_CHANGE_NOUN}\b|"
    rf"\b{_CHANGE_NOUN}\s+(?:complete|completed|finished|done)\b", re.I)
# Any mention of a change, done or not: a name in such a sentence is no endorsement of it
# ("bcrypt was replaced", "the bcrypt path has been deleted", "the Opsgenie sunset")
CHANGE = re.compile(
    rf"{CHANGED.pattern}|\b(?:{_CHANGE_NOUN}|sunset|deleted|removed|dropped|abandoned|"
    r"phased out|invalidated|reemplaz\w*|sustituid\w*)\b|迁移|替换|替代|取代|代替|改用", re.I)
# "from X to Y": what a change left behind (X) and what it moved to (Y)
TRANSITION = re.compile(r"\bfrom\s+([A-Z][\w.+#-]+)(?:\s+\w+){0,3}?\s+to\s+([A-Z][\w.+#-]+)")


def first_move(changes) -> tuple[str, re.Match] | None:
    """The first of a memory's change sentences (Features.changes) naming a move "from X to
    Y", with its TRANSITION match: the move analyzers/temporal.py's reversals follow."""
    for sentence, _, _ in changes:
        m = TRANSITION.search(sentence)
        if m:
            return sentence, m
    return None


# Cues that forbid what precedes them: "tab characters are not allowed", "... are sent back",
# "the lockfile stays out of version control"
PROHIBITED = re.compile(
    r"\b(?:(?:is|are|be|get|gets)\s+(?:not\s+(?:allowed|permitted|accepted|used)|"
    r"forbidden|prohibited|banned|rejected|refused|sent back)|"
    r"(?:should|must|will)\s+be\s+(?:rejected|refused|sent back)|"
    r"(?:stays?|remains?|(?:is|are)\s+kept)\s+out\s+of)\b"
    r"|\b(?:nicht\s+(?:erlaubt|zulässig|gestattet)|verboten|no\s+(?:está|están)\s+permitid[oa]s?|"
    r"prohibid[oa]s?)\b|不允许|不能使用|"
    # Chinese passive: "React 已被 Vue 取代" (React has been replaced by Vue)
    r"(?:已经|已)?被[^，。；,;]{0,20}?(?:替代|取代|代替|替换|淘汰|弃用)", re.I)
# Cues that forbid the action that follows them ("never merges", "do not introduce") and cues
# that forbid the thing that follows them ("no tabs", "decided against mappers")
FORBIDS_ACTION = re.compile(
    r"\b(?:never|do not|don't|does not|doesn't|must not|mustn't|should not|shouldn't|"
    r"cannot|can't|avoid|nie|niemals|nunca|jamás|evita|evitar)\b|不要|禁止|不得|切勿|停止", re.I)
# "prohibit", "disable", "turn off" say no to what follows as "no" does: "Prohibit force
# pushes" against "Allow force pushes", "Disable HTTP/2" against "Enable HTTP/2" (the
# present only: "was turned off" records a change, "is disabled" describes a state)
FORBIDS_THING = re.compile(
    r"\b(?:no|not|against|instead of|rather than|nicht|kein|keine|keinen|statt|"
    r"anstatt|en lugar de|prohibit|prohibits|forbid|forbids|disallow|disallows|disable|"
    r"disables|(?:turn|turns|switch|switches)\s+off|verbiete|verbietet|deaktiviere|"
    r"deaktiviert|prohíbe|prohibir|desactiva|desactivar)\b|不|没有|禁用|停用|弃用|"
    # "用 Vue 替代 React", "X 取代 Y", "用 X 代替 Y": the one replaced follows the cue
    r"替代|取代|代替", re.I)
# verbs that only carry their object: "do not introduce X" forbids X
LIGHT_VERBS = frozenset(terms("use add introduce write create put make have do take bring "
                              "commit push adopt rely depend start allow let 用 使用 采用 引入"))
# the first word of every cue above: a set lookup spares most sentences the regexes
_CUE_WORDS = frozenset("""never do don't does doesn't must mustn't should shouldn't cannot can't
    avoid nie niemals nunca jamás evita evitar no not against instead rather nicht kein keine
    keinen statt anstatt en forbidden prohibited banned rejected refused sent out verboten
    prohibido prohibida prohibidos prohibidas prohibit prohibits forbid forbids disallow
    disallows disable disables turn turns switch switches verbiete verbietet deaktiviere
    deaktiviert prohíbe prohibir desactiva desactivar""".split())
# (not 关闭: it closes an issue or a file as often as it turns something off)
_CJK_CUES = ("不", "没有", "禁止", "切勿", "禁用", "停止", "停用", "弃用", "替代",
             "取代", "代替", "被")
_SPLIT = re.compile(r"[^\w'’]+")


# any of the cues: one vocabulary of negation for every analyzer
NEGATION = re.compile("|".join(f"(?:{p.pattern})" for p in (PROHIBITED, FORBIDS_ACTION,
                                                            FORBIDS_THING)), re.I)
_CLAUSE = re.compile(r"[;:,()]|\s+(?:but|and then|while|whereas|aber|sondern|pero|sino)\s+|，|；")


def _may_forbid(sentence: str) -> bool:
    return (not _CUE_WORDS.isdisjoint(_SPLIT.split(sentence.lower()))
            or any(c in sentence for c in _CJK_CUES))


Prohibition = tuple[bool, tuple[str, ...], str]  # (is_action, terms in order, the clause)

# "not a git repository", "not the owner": a negated description, not a ban; "worse than no
# memory": a comparison
_DESCRIBES = re.compile(r"\s+(?:a|an|the)\b", re.I)
_COMPARES = re.compile(r"\bthan\s*$", re.I)


def _forbids(clause: str, cue: re.Match) -> bool:
    """Whether a "no"/"not" cue forbids what follows it."""
    if cue.group(0).lower() == "not" and _DESCRIBES.match(clause, cue.end()):
        return False
    return not _COMPARES.search(clause, 0, cue.start())


# a conditional clause states when something holds, it forbids nothing: "if there is no session
# cookie", "when no token is given", "unless nothing changed"
# ("si" not in capitals: "SI units" are no condition)
_CONDITION = re.compile(r"\b(?:if|when|whenever|unless|in case|wenn|falls|sofern|(?-i:[Ss]i)|"
                        r"cuando)\b[^,;:()\n.!?]*", re.I)


def prohibitions(sentence: str) -> list[Prohibition]:
    """What ``sentence`` forbids: (is_action, terms in order, clause) for each clause with a
    cue (the clause in its own words, to quote as evidence). The
    words after "never", "do not" (an action; a light verb such as "use" gives way to its
    object) or after "no", "against" (a thing), or the words before "are not allowed",
    "should be rejected" (a thing)."""
    out: list[Prohibition] = []
    if not _may_forbid(sentence):
        return out
    for clause in _CLAUSE.split(_CONDITION.sub(";", sentence)):
        if not clause or not clause.strip():
            continue
        action = False
        m = PROHIBITED.search(clause)
        if m:
            scope = terms(clause[:m.start()])[-4:]
        elif m := FORBIDS_ACTION.search(clause):
            scope = terms(clause[m.end():])
            action = bool(scope) and scope[0] not in LIGHT_VERBS
            scope = (scope if action else scope[1:])[:4]
        elif m := next((m for m in FORBIDS_THING.finditer(clause) if _forbids(clause, m)),
                       None):
            scope = terms(clause[m.end():])[:4]
        else:
            continue
        if scope:
            out.append((action, tuple(scope), clause.strip()))
    return out


def point_code(point: str) -> tuple[dict[str, str], set[str]]:
    """The code a memory's point names: what it prescribes (named outside any clause that
    forbids something), each with the sentence naming it, and what it names inside such a
    clause."""
    prescribed: dict[str, str] = {}
    forbidden: set[str] = set()
    for sentence in point.split("\n"):
        forbidden_here = {c.lower() for _, _, clause in prohibitions(sentence)
                          for c in INLINE_CODE.findall(clause)}
        forbidden |= forbidden_here
        for code in INLINE_CODE.findall(sentence):
            if code.lower() not in forbidden_here:
                prescribed.setdefault(code.lower(), sentence)
    return prescribed, forbidden


# A directive tells the reader what to do (a rule); a fact describes how things are. A newer
# memory recording a change makes an old fact stale, but contradicts an old rule.
IMPERATIVE = re.compile(
    r"^\s*(use|do|don't|never|always|keep|run|give|install|indent|format|prefer|avoid|ask|"
    r"write|put|store|make|add|set|send|call|retry|wrap|follow|name|mark|open|push|merge|"
    r"commit|deploy|release|no)\b", re.I)
DIRECTIVE = re.compile(rf"{IMPERATIVE.pattern}|\b(must|should|shall|may|never|always|only|"
                       r"required|not allowed|forbidden)\b|"
                       # Chinese: must, should, always, by default use, forbidden, do not;
                       # or an opening "use"/"please" (not the nouns 用户 user, 用于 used
                       # for, 用途 purpose, 用法 usage, 使用说明 instructions for use)
                       r"必须|务必|应该|应当|一律|始终|总是|默认用|默认使用|禁止|不要|不得|切勿|"
                       r"^\s*(?:请|使用(?!说明|指南|方法)|采用|用(?![户于途法量]))", re.I)


# a code span may wrap onto the next line (markdown reads the line break as a space), never
# across a blank line
INLINE_CODE = re.compile(r"`([^`\n]+(?:\n[^`\n]+)*)`")


def records_change(sentence: str) -> bool:
    """A change recorded as done; an instruction ("Add a note that the repo has been retired")
    records none."""
    return (not IMPERATIVE.match(sentence)
            and bool(CHANGED.search(sentence) or CHANGE_DONE.search(sentence)))
