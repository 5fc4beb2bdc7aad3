"""README's "Testing your application against zkafka" example runs, as printed, in a suite of its own."""
from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    section = README.read_text().split("## Testing your application against zkafka", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, "the section holds one python example"
    return blocks[0]


def test_the_readme_example_passes(pytester):
    pytester.makepyfile(test_readme=readme_example())
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=2)
