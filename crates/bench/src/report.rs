//! Markdown tables for stdout.

/// A Markdown table.
pub struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as Markdown (numbers right-aligned).
    pub fn render(&self) -> String {
        let mut s = String::new();
        s.push_str(&format!("| {} |\n", self.head.join(" | ")));
        s.push_str(&format!(
            "|{}\n",
            self.head
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                .collect::<String>()
        ));
        for r in &self.rows {
            s.push_str(&format!("| {} |\n", r.join(" | ")));
        }
        s
    }
}

/// A number with `d` decimals.
pub fn f(x: f64, d: usize) -> String {
    format!("{x:.d$}")
}
