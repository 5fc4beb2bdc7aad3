"""scripts.tools.kafka_mirror_maker.command.main: a file that cannot run is one line ``Error: <key>: <problem>``
on stderr and exit 1, before any client exists (every client factory fails the test if called); a missing
required flag is argparse's exit 2."""
from __future__ import annotations

import pytest

from scripts.tools.kafka_mirror_maker import clients, command

GOOD = {"clusters": "a, b", "a.bootstrap.servers": "127.0.0.1:1", "b.bootstrap.servers": "127.0.0.1:2",
        "a->b.enabled": "true"}


@pytest.fixture(autouse=True)
def no_clients(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("a client was created")

    for name in ("admin", "reader", "source_consumer", "target_producer", "progress_consumer",
                 "offset_syncs_producer", "plain_producer"):
        monkeypatch.setattr(clients, name, refuse)
    monkeypatch.setattr(command, "run_mirror_maker", refuse)


def write(tmp_path, props: dict[str, str], drop: tuple[str, ...] = ()) -> str:
    path = tmp_path / "mm2.properties"
    path.write_text("".join(f"{k} = {v}\n" for k, v in props.items() if k not in drop))
    return str(path)


def one_error_line(capsys) -> str:
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("Error: ") and err.endswith("\n") and err.count("\n") == 1, err
    return err[len("Error: "):-1]


@pytest.mark.parametrize("change, drop, key, problem", [
    ({"a->c.enabled": "true"}, (), "a->c.enabled", "unknown cluster alias 'c'"),
    ({"a->b.topics": "app-[0-9"}, (), "a->b.topics", "invalid regular expression 'app-[0-9'"),
    ({}, ("b.bootstrap.servers",), "b.bootstrap.servers", "required"),
    ({"a->b.enabled": "yes"}, (), "a->b.enabled", "not a boolean"),
    ({"a->b.emit.checkpoints.interval.seconds": "0"}, (), "a->b.emit.checkpoints.interval.seconds",
     "0 is not an interval"),
    ({"b.security.protocol": "TLS"}, (), "b.security.protocol", "is not one of PLAINTEXT"),
    ({}, ("clusters",), "clusters", "required"),
])
def test_a_bad_file_is_one_error_line_naming_the_key_and_exit_1(tmp_path, capsys, change, drop, key, problem):
    path = write(tmp_path, {**GOOD, **change}, drop)
    assert command.main([path]) == 1
    message = one_error_line(capsys)
    assert message.startswith(f"{key}: ") and problem in message, message


def test_no_enabled_flow_names_the_file(tmp_path, capsys):
    path = write(tmp_path, {**GOOD, "a->b.enabled": "false"})
    assert command.main([path]) == 1
    assert one_error_line(capsys) == f"{path}: no enabled flow (set <source>-><target>.enabled = true)"


def test_clusters_without_a_flow_into_them_is_no_enabled_flow(tmp_path, capsys):
    path = write(tmp_path, GOOD)
    assert command.main([path, "--clusters", "a"]) == 1
    assert one_error_line(capsys).startswith(f"{path}: no enabled flow")


def test_an_unknown_clusters_alias_names_the_flag(tmp_path, capsys):
    path = write(tmp_path, GOOD)
    assert command.main([path, "--clusters", "z"]) == 1
    assert one_error_line(capsys).startswith("--clusters: unknown cluster alias 'z'")


def test_a_missing_file_names_the_path(tmp_path, capsys):
    path = str(tmp_path / "nowhere.properties")
    assert command.main([path]) == 1
    assert one_error_line(capsys) == f"{path}: cannot read the file: No such file or directory"


def test_a_good_file_reaches_the_run_with_its_flows(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(command, "run_mirror_maker", lambda config, host, port: seen.append(
        ([f.name for f in config.flows], host, port)) or 0)
    assert command.main(["--http-port", "0", write(tmp_path, GOOD)]) == 0
    assert seen == [(["a->b"], "127.0.0.1", 0)]


# --- translate-offsets ---------------------------------------------------------------------------------------------

def translate_argv(path: str, **flags: str) -> list[str]:
    values = {"--config": path, "--source": "a", "--target": "b", "--group": "g", **flags}
    return ["translate-offsets", *[item for flag, value in values.items() if value for item in (flag, value)]]


@pytest.mark.parametrize("missing", ["--config", "--source", "--target", "--group"])
def test_translate_offsets_without_a_required_flag_is_argparse_exit_2(tmp_path, capsys, missing):
    with pytest.raises(SystemExit) as info:
        command.main(translate_argv(write(tmp_path, GOOD), **{missing: ""}))
    assert info.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and "the following arguments are required: " + missing in err
    assert err.startswith("usage: kafka-mirror-maker translate-offsets")


def test_run_without_a_file_is_argparse_exit_2(capsys):
    with pytest.raises(SystemExit) as info:
        command.main([])
    assert info.value.code == 2
    assert "the following arguments are required: config" in capsys.readouterr().err


def test_translate_offsets_with_a_bad_file_is_one_error_line(tmp_path, capsys):
    path = write(tmp_path, {**GOOD, "a->b.topics": "("})
    assert command.main(translate_argv(path)) == 1
    assert one_error_line(capsys).startswith("a->b.topics: invalid regular expression")


def test_translate_offsets_with_an_unknown_alias_fails_before_connecting(tmp_path, capsys):
    assert command.main(translate_argv(write(tmp_path, GOOD), **{"--source": "z"})) == 1
    assert one_error_line(capsys) == "unknown cluster alias 'z' (clusters = a, b)"


@pytest.mark.parametrize("key", ["a.consumer.no.such.setting", "b.producer.no.such.setting", "a.admin.no.such.setting"])
def test_a_client_setting_librdkafka_refuses_is_one_error_line_at_start(tmp_path, key):
    """The process exits 1 with one line naming the setting, before it connects anywhere (the bootstrap servers
    are closed ports) and before printing that it started."""
    import subprocess
    import sys
    path = write(tmp_path, {**GOOD, key: "1"})
    out = subprocess.run([sys.executable, "-m", "scripts.tools.kafka_mirror_maker", path], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 1 and "started" not in out.stdout
    errors = [line for line in out.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "no.such.setting" in errors[0]
