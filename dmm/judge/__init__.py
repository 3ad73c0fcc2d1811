"""The judge: the one home of language models in dmm (docs/conflicts.md#the-judge).

settings.py reads ``[judge]`` from the store's config; client.py is the only module of dmm
that imports the ``llm`` package (an optional extra), asks a model and checks what it answers;
prompts.py fences untrusted text inside prompts. Nothing here decides anything: a verdict is
evidence a person weighs.
"""
