//! The HTML page in a real browser: headless Chromium loads the
//! self-contained file (no network), runs its script, and the test checks
//! the rendered DOM: the graph's nodes and edges, the details panel of a
//! clicked node (selected through the address), and the recommendation
//! list. The screenshot is kept under target/tmp/advise-html/.

use crate::util::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let o = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        o.status.success().then(|| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
    })
}

/// Loads `page` (with `fragment`) headless; returns the DOM after scripts ran.
fn render(browser: &Path, page: &Path, fragment: &str, screenshot: &Path, profile_dir: &Path) -> String {
    let url = format!("file://{}{fragment}", page.display());
    let o = run(Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"])
        .args(["--disable-component-update", "--disable-sync", "--window-size=1280,2400", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile_dir.display()))
        .arg(format!("--screenshot={}", screenshot.display()))
        .arg("--dump-dom")
        .arg(&url));
    assert!(o.status.success(), "chromium failed: {}", stderr(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn page_renders_graph_details_and_recommendations_in_chromium() {
    let Some(browser) = chromium() else {
        need("chromium", "Chromium is not installed (make browser, scripts/install-deps.sh --browser, installs it)");
        return;
    };
    let d = tmp();
    random_file(&d.path().join("in"), 400_000);
    let p = strace_profile(
        d.path(),
        &[
            corpus("copy").to_str().unwrap(),
            d.path().join("in").to_str().unwrap(),
            d.path().join("out").to_str().unwrap(),
        ],
    );
    let page = d.path().join("advice.html");
    let o = run(syscluster()
        .args(["advise", "-q", "--no-calibration", "--format", "html", "-o"])
        .arg(&page)
        .arg(d.path().join("strace.json")));
    assert!(o.status.success(), "{}", stderr(&o));
    let read = p.nodes.iter().find(|n| p.label(n.id) == "read(3)").expect("read(3)").id;
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("advise-html");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("copy.png");
    let _ = std::fs::remove_file(&shot);
    let dom = render(&browser, &page, &format!("#node={read}"), &shot, &d.path().join("chromium"));

    // The graph: one <g class="node"> per drawn node, as many as the script says it drew.
    assert!(dom.contains("id=\"graph-svg\""), "no graph in:\n{dom}");
    let drawn: usize = dom
        .split("data-rendered=\"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .expect("data-rendered");
    assert!(drawn >= 10, "{drawn} nodes drawn");
    assert_eq!(count(&dom, "<g class=\"node"), drawn);
    assert!(count(&dom, "class=\"edge\"") >= drawn - 1, "edges join the nodes");
    assert!(dom.contains("data-label=\"read(3)\"") && dom.contains("data-label=\"write(4)\""));
    assert!(count(&dom, "<g class=\"node advised") >= 2, "the advised nodes are marked");
    // The clicked node's panel: its value profiles.
    let panel = dom.split("<aside id=\"details\"").nth(1).expect("details panel");
    assert!(
        panel.starts_with(&format!(" data-node=\"{read}\"")),
        "node {read} selected: {}",
        &panel[..200.min(panel.len())]
    );
    assert!(
        panel.contains("<h3>read(3)</h3>") && panel.contains("value profiles of read") && panel.contains("4096 ("),
        "{}",
        &panel[..800.min(panel.len())]
    );
    // The ranked recommendations.
    for (rank, rule) in [(1, "copy-offload"), (2, "larger-block"), (3, "looped-multicall")] {
        assert!(dom.contains(&format!("id=\"rec-{rank}\" data-rule=\"{rule}\"")), "#{rank} {rule}");
    }
    assert!(dom.contains("copy_file_range(3, NULL, 4, NULL"));
    // The screenshot.
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 20_000, "{} bytes", png.len());

    // `report --format html` draws the same graph, with the advice.
    let page2 = d.path().join("report.html");
    let o = run(syscluster()
        .env("XDG_CACHE_HOME", d.path().join("cache"))
        .args(["report", "--format", "html", "-o"])
        .arg(&page2)
        .arg(d.path().join("strace.json")));
    assert!(o.status.success(), "{}", stderr(&o));
    let dom = render(&browser, &page2, "", &shots.join("report.png"), &d.path().join("chromium"));
    assert!(dom.contains("id=\"graph-svg\"") && dom.contains("data-rule=\"copy-offload\""));
    assert!(dom.contains("<section id=\"io\">") && dom.contains("<section id=\"sequences\">"));
}

#[test]
fn page_without_edges_still_draws_its_nodes() {
    let Some(browser) = chromium() else {
        need("chromium", "Chromium is not installed (make browser, scripts/install-deps.sh --browser, installs it)");
        return;
    };
    let d = tmp();
    let _ = strace_profile(d.path(), &[corpus("clean_few").to_str().unwrap()]);
    let page = d.path().join("few.html");
    let o = run(syscluster()
        .env("XDG_CACHE_HOME", d.path().join("cache"))
        .args(["report", "--format", "html", "-o"])
        .arg(&page)
        .arg(d.path().join("strace.json")));
    assert!(o.status.success(), "{}", stderr(&o));
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("advise-html");
    std::fs::create_dir_all(&shots).unwrap();
    let dom = render(&browser, &page, "", &shots.join("clean_few.png"), &d.path().join("chromium"));
    assert!(dom.contains("id=\"no-recommendations\""), "a clean program gets no recommendation");
    assert!(count(&dom, "<g class=\"node") >= 5);
}
