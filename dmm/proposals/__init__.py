"""Write-back: proposals as git branches, the reviewer's checks, and decisions recorded in git.

A proposal is one commit on ``refs/heads/dmm/proposals/<id>``; approving merges it into the
checked-out branch, closing it (reject, defer, withdraw) records a commit on ``dmm/audit``.
"""
