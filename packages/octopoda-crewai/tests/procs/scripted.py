"""The scripted models of the tests (octopoda_crewai.testing), importable in subprocesses."""

from octopoda_crewai.testing import MemoryLLM, ScriptedLLM, action, final, hashed_words

__all__ = ["MemoryLLM", "ScriptedLLM", "action", "final", "hashed_words"]
