"""Record and replay: a content-addressed cache of the app's wire exchanges, their traces and
the model calls (judge, simulated user) of a run, and the invoker shim that answers from it.

`session.ReplaySession` is the one object a run holds; `store.Cache` is the directory."""
