package dev.mx.cli;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** A plain text table with left-aligned columns sized to their content. */
public final class Table {
  private final List<String[]> rows = new ArrayList<>();
  private final int columns;

  public Table(String... header) {
    this.columns = header.length;
    rows.add(header);
  }

  public Table row(Object... cells) {
    String[] r = new String[columns];
    for (int i = 0; i < columns; i++) {
      r[i] = i < cells.length && cells[i] != null ? cells[i].toString() : "";
    }
    rows.add(r);
    return this;
  }

  public void print(PrintWriter out) {
    int[] width = new int[columns];
    for (String[] r : rows) {
      for (int i = 0; i < columns; i++) {
        width[i] = Math.max(width[i], r[i].length());
      }
    }
    for (String[] r : rows) {
      StringBuilder sb = new StringBuilder();
      for (int i = 0; i < columns; i++) {
        sb.append(r[i]);
        if (i < columns - 1) {
          sb.append(" ".repeat(width[i] - r[i].length() + 2));
        }
      }
      out.println(sb.toString().stripTrailing());
    }
    out.flush();
  }
}
