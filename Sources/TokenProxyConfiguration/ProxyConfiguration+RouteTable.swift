import Foundation

extension ProxyConfiguration {
    /// The route table printed by `tokenproxy check`: a header line, then one line per route
    /// in file order, with aligned columns NAME, HOST (`*` for any), PATH_PREFIX, UPSTREAM,
    /// PROVIDER (`-` for none) and GRANT (`-` without a provider). Columns are separated by
    /// two spaces; lines have no trailing spaces and the text no final newline.
    package func routeTable() -> String {
        var rows: [[String]] = [["NAME", "HOST", "PATH_PREFIX", "UPSTREAM", "PROVIDER", "GRANT"]]
        for route in self.routes {
            let grant = route.provider.flatMap { self.providers[$0]?.grant.rawValue } ?? "-"
            rows.append([route.name, route.host ?? "*", route.pathPrefix, route.upstream, route.provider ?? "-", grant])
        }
        var widths = [Int](repeating: 0, count: rows[0].count)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        return rows.map { row in
            var line = ""
            for (column, cell) in row.enumerated() {
                if column == row.count - 1 {
                    line += cell
                } else {
                    line += cell + String(repeating: " ", count: widths[column] - cell.count + 2)
                }
            }
            return line.hasSuffix(" ") ? String(line.reversed().drop(while: { $0 == " " }).reversed()) : line
        }
        .joined(separator: "\n")
    }
}
