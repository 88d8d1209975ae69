"""Without the mcp extra the core still imports, and ``octopoda mcp`` says how to install
it. (Runs without mcp installed: an import of mcp is made to fail in a subprocess.)"""

from __future__ import annotations

import subprocess
import sys

INSTALL = "pip install 'octopoda-core[mcp]'"
BLOCK_MCP = "import sys; sys.modules['mcp'] = None; "  # `import mcp` now raises ImportError


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_the_core_and_its_cli_import_without_mcp() -> None:
    proc = _python(
        BLOCK_MCP + "import octopoda; from octopoda import AgentRuntime;"
        " from octopoda.cli import build_cli; build_cli();"
        " AgentRuntime('a', store=':memory:').remember('k', 1);"
        " print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'pydantic')))"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['mcp']"  # only the blocked entry: nothing imported it


def test_octopoda_mcp_without_the_extra_prints_the_install_line() -> None:
    proc = _python(BLOCK_MCP + "from octopoda.cli import main; main(['mcp'])")
    assert proc.returncode == 1
    assert INSTALL in proc.stderr and proc.stdout == ""


def test_require_mcp_raises_a_config_error_with_the_install_line() -> None:
    proc = _python(
        BLOCK_MCP + "from octopoda import ConfigError\n"
        "from octopoda._mcp import require_mcp\n"
        "try:\n    require_mcp()\nexcept ConfigError as e:\n    print(e)"
    )
    assert proc.returncode == 0 and INSTALL in proc.stdout, proc.stderr
