//! Rich output and IPython idioms with real libraries: a pandas
//! DataFrame as a capped Markdown table, matplotlib figures as PNG parts
//! sent once, display() with mime bundles, and `!cmd`, `%%bash`,
//! `%%timeit`, `%time`, `%cd` through IPython's transformer and through
//! the fallback rewriter. pandas, matplotlib and IPython come from
//! scripts/install-kernel.sh.

// Tests build their fixtures directly.
#![allow(clippy::disallowed_methods)]

mod common;

use common::*;
use gantry_core::Part;

#[tokio::test]
async fn a_dataframe_is_a_markdown_table_capped_with_the_cut_said() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("import pandas as pd\npd.DataFrame({'city': ['Oslo', 'Lima'], 'temp': [3, 19]})"),
    )
    .await;
    assert!(text.contains("|  | city | temp |"), "{text}");
    assert!(text.contains("| 0 | Oslo | 3 |"), "{text}");
    assert!(text.contains("| 1 | Lima | 19 |"), "{text}");
    let big = cell(
        &run,
        py("pd.DataFrame({f'c{i}': range(100) for i in range(30)})"),
    )
    .await;
    assert!(big.contains("[100 rows × 30 columns; shown: first 10 and last 10 of 100 rows, first 20 of 30 columns]"), "{big}");
    assert!(big.contains("| 99 |"), "the tail rows are kept: {big}");
    assert!(!big.contains("| 50 |"), "the middle is cut: {big}");
    run.shutdown().await;
}

#[tokio::test]
async fn every_open_figure_becomes_one_png_part_sent_once() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let result = cell_result(
        &run,
        py("import matplotlib.pyplot as plt\nfig = plt.figure()\nplt.plot([1, 3, 2])\nplt.figure()\nplt.bar(['a', 'b'], [2, 5])\ndisplay(fig)\nprint('drawn')"),
    )
    .await;
    let pngs = images(&result);
    assert_eq!(
        pngs.len(),
        2,
        "each figure once: {:?}",
        result.text_content()
    );
    for png in &pngs {
        let (width, height) = png_dimensions(png).expect("a whole PNG");
        assert!(width > 100 && height > 100, "{width}x{height}");
        assert!(png.len() <= 200_000, "{} bytes", png.len());
    }
    // plt.show() by reflex: the figure once, and no warning.
    let shown = cell_result(&run, py("plt.plot([1, 2])\nplt.show()")).await;
    assert_eq!(images(&shown).len(), 1);
    assert!(
        !shown.text_content().contains("non-interactive"),
        "{}",
        shown.text_content()
    );
    // Figures were closed: the next cell shows none.
    let next = cell_result(&run, py("len(plt.get_fignums())")).await;
    assert!(images(&next).is_empty());
    assert!(next.text_content().starts_with('0'));
    run.shutdown().await;
}

/// The driver holds a cell's result back to send it with the cell's end
/// in one write: a figure left open, shown after the result, still comes
/// after it, and a print before it still comes before.
#[tokio::test]
async fn a_held_result_keeps_its_place_between_prints_and_figures() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let result = cell_result(
        &run,
        py("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nprint('before')\n'the value'"),
    )
    .await;
    let kinds: Vec<String> = result
        .llm_content
        .iter()
        .map(|part| match part {
            Part::Image { .. } => "png".to_string(),
            other => serde_json::to_string(other).unwrap(),
        })
        .collect();
    let at = |what: &str| {
        kinds
            .iter()
            .position(|kind| kind.contains(what))
            .unwrap_or_else(|| panic!("no {what} in {kinds:?}"))
    };
    assert!(at("before") <= at("the value"), "{kinds:?}");
    assert!(at("the value") < at("png"), "{kinds:?}");
    run.shutdown().await;
}

#[tokio::test]
async fn display_picks_png_then_markdown_then_text() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("class Table:\n    def _repr_markdown_(self):\n        return '| k |\\n|---|\\n| v |'\n    def __repr__(self):\n        return 'plain'\ndisplay(Table())\nTable()"),
    )
    .await;
    assert_eq!(text.matches("| k |").count(), 2, "{text}");
    assert!(!text.contains("plain"), "{text}");
    run.shutdown().await;
}

/// The idioms, checked the same way through either transformer.
async fn idioms_work(run: &gantry_core::Run, dir: &std::path::Path) {
    let text = cell(run, py("name = 'world'\n!echo hello $name")).await;
    assert!(text.starts_with("hello world"), "{text}");
    let text = cell(run, py("files = !printf 'a\\nb\\n'\nfiles")).await;
    assert!(text.starts_with("['a', 'b']"), "{text}");
    let text = cell(run, py("%%bash\necho from bash\necho $((6 * 7))")).await;
    assert!(text.starts_with("from bash\n42"), "{text}");
    let text = cell(run, py("%%timeit\nsum(range(100))")).await;
    assert!(text.contains("per loop (mean ± std. dev. of"), "{text}");
    let text = cell(run, py("%time total = sum(range(10))\ntotal")).await;
    assert!(text.contains("Wall time:"), "{text}");
    assert!(text.contains("45"), "{text}");
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let text = cell(run, py("%cd sub\nimport os\nos.getcwd()")).await;
    assert!(text.contains("/sub'"), "{text}");
    let error = failing(run, py("%load_ext something")).await;
    assert!(error.contains("%load_ext is not supported"), "{error}");
}

#[tokio::test]
async fn ipython_idioms_through_ipythons_own_transformer() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(&run, py("import IPython\nIPython.__name__")).await;
    assert!(
        text.starts_with("'IPython'"),
        "IPython must be installed for this test: {text}"
    );
    idioms_work(&run, dir.path()).await;
    std::fs::remove_dir(dir.path().join("sub")).unwrap();
    run.shutdown().await;
}

#[tokio::test]
async fn ipython_idioms_through_the_fallback_rewriter() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    // The kernel's environment has IPython; hide it from this kernel
    // (tests/environment.rs also runs the idioms in a .venv without it).
    cell(&run, py("import sys\nsys.modules['IPython'] = None")).await;
    idioms_work(&run, dir.path()).await;
    run.shutdown().await;
}

#[tokio::test]
async fn raw_mime_bundles_and_javascript_displays() {
    let dir = workspace(&[]);
    let run = run(dir.path());
    let text = cell(
        &run,
        py("display({'text/markdown': '**bold**', 'text/plain': 'bold'}, raw=True)"),
    )
    .await;
    assert!(text.starts_with("**bold**"), "{text}");
    let result = cell_result(
        &run,
        py("import io, base64, matplotlib.pyplot as plt\nfig = plt.figure()\nbuffer = io.BytesIO()\nfig.savefig(buffer, format='png')\nplt.close(fig)\npng = buffer.getvalue()\ndisplay({'image/png': png}, raw=True)"),
    )
    .await;
    assert_eq!(images(&result).len(), 1);
    let png = base64_png(&run).await;
    let shown = cell_result(
        &run,
        js(&format!("display('plain text'); display.markdown('| a |'); display(Buffer.from('{png}', 'base64'))")),
    )
    .await;
    let text = shown.text_content();
    assert!(text.starts_with("plain text\n| a |"), "{text}");
    let pictures = images(&shown);
    assert_eq!(pictures.len(), 1);
    assert!(png_dimensions(&pictures[0]).is_some());
    run.shutdown().await;
}

/// A small PNG, as base64, made by matplotlib in the run's Python kernel.
async fn base64_png(run: &gantry_core::Run) -> String {
    let text = cell(
        run,
        py("import io, base64, matplotlib.pyplot as plt\nfig = plt.figure(figsize=(1, 1))\nbuffer = io.BytesIO()\nfig.savefig(buffer, format='png')\nplt.close(fig)\nprint(base64.b64encode(buffer.getvalue()).decode())"),
    )
    .await;
    text.lines().next().unwrap().to_string()
}
