"""Tests of the `zygopy` command line (jit/cli.py)."""
import subprocess
import sys
import textwrap

import pytest

from jit.cli.commands import main

SOURCE = textwrap.dedent("""\
    def pow(x, n):
        r = 1
        while n > 0:
            n -= 1
            r *= x
        return r

    def generates(x):
        yield from range(x)
""")


@pytest.fixture
def userfile(tmp_path):
    path = tmp_path / "cli_user_funcs.py"
    path.write_text(SOURCE)
    return str(path)


def test_show_prints_lowered_ir(userfile, capsys):
    assert main(["show", f"{userfile}:pow"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("function pow(%1 x, %2 n)")
    assert "φ (" in out and "return" in out


@pytest.mark.parametrize("target, message", [
    ("{dir}/missing.py:f", "no such file"),
    ("{file}:nope", "has no function 'nope'"),
    ("{file}", "expected FILE.py:FUNC"),
    ("{file}:generates", "generates"),
])
def test_show_errors_are_one_line_exit_2(userfile, capsys, target, message):
    import os
    spec = target.format(file=userfile, dir=os.path.dirname(userfile))
    assert main(["show", spec]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_demo_shows_every_stage_and_checks_out(capsys):
    assert main(["demo", "--no-timing"]) == 0
    out = capsys.readouterr().out
    assert "MISMATCH" not in out and "all values agree with CPython" in out
    for marker in ["function pow(", "function pow_forward(", "# edge", "push(",
                   "function pow_adjoint(", "pop(", "function leaky_relu_adjoint("]:
        assert marker in out
    assert out.count(" ok\n") >= 9 and out.count("d/dx ") == 4


def test_console_entry_point_runs(userfile):
    proc = subprocess.run([sys.executable, "-m", "jit.cli", "show", f"{userfile}:nope"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.startswith("zygopy: ") and "Traceback" not in proc.stderr


# -- stages, arguments, grad, --dot -------------------------------------------------------

def test_show_adjoint_stage_prints_forward_and_adjoint(userfile, capsys):
    assert main(["show", f"{userfile}:pow", "--stage", "adjoint", "--args", "2.0", "3"]) == 0
    out = capsys.readouterr().out
    assert "function pow_forward(" in out and "push(" in out
    assert "function pow_adjoint(" in out and "pop(" in out


@pytest.mark.parametrize("stage, marker", [("typed", "::float64"), ("llvm", "define"),
                                           ("native", "ret")])
def test_show_jit_stages(userfile, capsys, stage, marker):
    assert main(["show", f"{userfile}:pow", "--stage", stage, "--args", "2.0", "3"]) == 0
    assert marker in capsys.readouterr().out


def test_show_stage_needing_args_without_them_is_a_one_line_error(userfile, capsys):
    assert main(["show", f"{userfile}:pow", "--stage", "typed"]) == 2
    err = capsys.readouterr().err
    assert "--args" in err and err.count("\n") == 1


def test_ptx_stage_prints_ptx_or_says_why_not(userfile, capsys):
    import jit
    status = main(["show", f"{userfile}:pow", "--stage", "ptx", "--args", "2.0", "3"])
    out, err = capsys.readouterr()
    if status == 0:
        assert hasattr(jit, "code_ptx") and ".entry" in out
        return
    assert status == 2 and "ptx" in err and err.count("\n") == 1 and "Traceback" not in err
    if not hasattr(jit, "code_ptx"):
        assert "not available" in err


def test_ptx_stage_without_cuda_backend_is_one_line(userfile, capsys, monkeypatch):
    import jit
    monkeypatch.delattr(jit, "code_ptx", raising=False)
    assert main(["show", f"{userfile}:pow", "--stage", "ptx", "--args", "2.0", "3"]) == 2
    err = capsys.readouterr().err
    assert "not available" in err and err.count("\n") == 1


@pytest.mark.parametrize("text, want", [("2.0", 2.0), ("3", 3), ("(1.0, 2)", (1.0, 2)),
                                        ("-1e-3", -1e-3), ("True", True)])
def test_arguments_are_python_literals(text, want):
    from jit.cli.args import parse_arg
    got = parse_arg(text)
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize("text, dtype, shape", [("[1.0, 2.0]", "float64", (2,)),
                                                ("np.array([[1, 2], [3, 4]])", "int64", (2, 2)),
                                                ("array([0.5])", "float64", (1,))])
def test_list_arguments_become_arrays(text, dtype, shape):
    from jit.cli.args import parse_arg
    got = parse_arg(text)
    assert got.dtype == dtype and got.shape == shape


@pytest.mark.parametrize("text", ["x", "[1, [2]]", "os.system('true')", "['a']"])
def test_bad_arguments_are_one_line_errors(userfile, capsys, text):
    assert main(["grad", f"{userfile}:pow", text, "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zygopy: ") and err.count("\n") == 1


def test_grad_prints_value_and_gradient(userfile, capsys):
    assert main(["grad", f"{userfile}:pow", "2.0", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("pow(2.0, 3) = 8.0\n")
    assert "d/dx = 12.0" in out and "d/dn = None" in out and "backend" in out


def test_grad_of_a_function_that_raises_is_a_one_line_error(userfile, capsys):
    assert main(["grad", f"{userfile}:pow", "'a'", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zygopy: pow('a', 2)") and err.count("\n") == 1


def test_dot_to_stdout_is_only_the_graph(userfile, capsys):
    assert main(["show", f"{userfile}:pow", "--dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph") and out.rstrip().endswith("}")
    assert 'label="true"' in out and 'label="false"' in out


def test_dot_to_file_with_adjoint_has_two_clusters(userfile, tmp_path, capsys):
    path = tmp_path / "g.dot"
    assert main(["show", f"{userfile}:pow", "--stage", "adjoint", "--args", "2.0", "3",
                 "--dot", str(path)]) == 0
    assert "pow_adjoint" in capsys.readouterr().out
    text = path.read_text()
    assert "subgraph cluster_0" in text and "subgraph cluster_1" in text


def test_svg_without_graphviz_is_a_clear_error(userfile, tmp_path, capsys, monkeypatch):
    import shutil
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert main(["show", f"{userfile}:pow", "--svg", str(tmp_path / "g.svg")]) == 2
    out, err = capsys.readouterr()
    assert "Graphviz" in err and err.count("\n") == 1 and out == ""


def test_svg_renders_where_graphviz_is_installed(userfile, tmp_path):
    import shutil
    if shutil.which("dot") is None:
        pytest.skip("Graphviz 'dot' is not installed")
    path = tmp_path / "g.svg"
    assert main(["show", f"{userfile}:pow", "--svg", str(path)]) == 0
    assert "<svg" in path.read_text()


def test_dot_of_the_typed_stage_shows_types(userfile, capsys):
    assert main(["show", f"{userfile}:pow", "--stage", "typed", "--args", "2.0", "3",
                 "--dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph") and "::float64" in out


def test_grad_dot_draws_forward_and_adjoint(userfile, capsys):
    assert main(["grad", f"{userfile}:pow", "2.0", "3", "--dot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("digraph") and "pow_forward" in out and "pow_adjoint" in out
