"""Run by the 3.3.4 interpreter (``octopoda==3.3.4`` installed, never our core): write data
through 3.3.4's own API into $SYNRIX_DATA_DIR, export a bundle, and print what 3.3.4 itself
recorded (its recall_history, read_shared, get_goal, read_messages) as JSON on stdout.

Usage: python write_334.py BUNDLE_PATH
"""

import contextlib
import io
import json
import sys

with contextlib.redirect_stdout(io.StringIO()):  # 3.3.4 prints banners to stdout
    from octopoda import AgentRuntime

    alice = AgentRuntime("alice")
    bob = AgentRuntime("bob")
    for value in ("Alice", "Alicia", "Ally"):
        alice.remember("user", value)
    alice.remember("user_name", "Bob")  # 3.3.4's recall("user") prefix-matches this
    alice.remember("prefs", {"theme": "dark", "lang": "en"}, tags=["ui"])
    alice.remember("prefs", {"theme": "light", "lang": "en"}, tags=["ui"])
    alice.remember("count", 1)
    alice.remember("count", 2)
    alice.remember_important("vip", "always answer", importance="critical")
    alice.share("price", "$2.1B", space="research")
    bob.share("price", "$2.2B", space="research")
    alice.share("price", "$2.3B", space="research")
    bob.share("plan", {"step": 1}, space="research")
    alice.log_decision("Keep VPS", "cheaper than cloud", {"cost": 5})
    bob.log_decision("Use Postgres", "team knows it")
    alice.set_goal("ship 1.0", milestones=["tests", "docs"])
    alice.update_progress(milestone_index=0)
    alice.send_message("bob", "hello bob")
    bob.broadcast("deploy at 5", "info", "global")
    alice.remember_with_ttl("otp", "1234", 3600)
    alice.remember("gone", "soon forgotten")
    alice.forget("gone")  # 3.3.4 deletes every version
    bob.remember("k", [1, 2, 3])
    alice.flush(timeout=30)
    bob.flush(timeout=30)
    import time

    time.sleep(1.0)  # log_decision writes from a background pool
    bundle = alice.export_memories()
    expected = {"agents": {}, "shared": {}, "goal": None, "messages": []}
    for runtime, keys in ((alice, ["user", "user_name", "prefs", "count", "vip"]), (bob, ["k"])):
        per_key = {}
        for key in keys:
            history = runtime.recall_history(key)
            per_key[key] = [v.get("value") for v in history.versions]  # newest first
        expected["agents"][runtime.agent_id] = per_key
    for key in ("price", "plan"):
        shared = alice.read_shared(key, space="research").value
        expected["shared"][key] = shared
    expected["goal"] = alice.get_goal()
    expected["messages"] = bob.read_messages(space="global")
    alice.shutdown()
    bob.shutdown()

with open(sys.argv[1], "w") as fh:
    json.dump(bundle, fh, default=str)
print(json.dumps(expected, default=str))
