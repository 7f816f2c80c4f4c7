/// The overview's chart: a rate over the last 15 minutes as an SVG line, drawn on the server, with
/// a title and a description that say what it shows in words.
enum RateChart {
    static let width = 600.0
    static let height = 180.0
    static let left = 52.0
    static let bottom = 24.0
    static let top = 10.0

    /// The SVG for `rates` (seconds ago, per second), `label` naming what is counted.
    static func svg(_ rates: [(secondsAgo: Double, perSecond: Double)], label: String) -> String {
        let window = 900.0
        let peak = rates.map(\.perSecond).max() ?? 0
        let scale = niceCeiling(peak)
        let plotWidth = width - left - 8
        let plotHeight = height - bottom - top
        let points = rates.filter { $0.secondsAgo <= window }.map { rate -> String in
            let x = left + plotWidth * (1 - rate.secondsAgo / window)
            let y = top + plotHeight * (1 - rate.perSecond / scale)
            return "\(format(x)),\(format(y))"
        }
        let latest = rates.last?.perSecond ?? 0
        let summary =
            rates.isEmpty
            ? "No samples yet: the chart fills in every 5 seconds."
            : "Now \(format(latest)) \(label) per second; the peak over the window is \(format(peak)) per second."
        var svg = """
            <svg class="chart" viewBox="0 0 \(Int(width)) \(Int(height))" role="img" aria-labelledby="chart-title chart-desc" \
            preserveAspectRatio="xMidYMid meet" xmlns="http://www.w3.org/2000/svg">
            <title id="chart-title">\(Layout.escape(label)) per second, last 15 minutes</title>
            <desc id="chart-desc">\(Layout.escape(summary))</desc>
            """
        for step in 0...2 {
            let value = scale * Double(step) / 2
            let y = top + plotHeight * (1 - Double(step) / 2)
            svg += "<line class=\"grid\" x1=\"\(format(left))\" x2=\"\(format(width - 8))\" y1=\"\(format(y))\" y2=\"\(format(y))\"/>"
            svg += "<text class=\"axis\" x=\"\(format(left - 6))\" y=\"\(format(y + 4))\" text-anchor=\"end\">\(format(value))</text>"
        }
        for minutes in [15, 10, 5, 0] {
            let x = left + plotWidth * (1 - Double(minutes) * 60 / window)
            let text = minutes == 0 ? "now" : "−\(minutes) min"
            let anchor = minutes == 0 ? "end" : minutes == 15 ? "start" : "middle"
            svg += "<text class=\"axis\" x=\"\(format(x))\" y=\"\(format(height - 6))\" text-anchor=\"\(anchor)\">\(text)</text>"
        }
        // An area down to zero, so that a single sample shows as a bar.
        if let first = points.first, let last = points.last {
            let base = format(top + plotHeight)
            let area = ["\(first.split(separator: ",")[0]),\(base)"] + points + ["\(last.split(separator: ",")[0]),\(base)"]
            svg += "<polygon class=\"area\" points=\"\(area.joined(separator: " "))\"/>"
            svg += "<polyline class=\"line\" fill=\"none\" points=\"\(points.joined(separator: " "))\"/>"
        }
        return svg + "</svg>\n<p class=\"chart-summary\">\(Layout.escape(summary))</p>"
    }

    /// The smallest of 1, 2, 5 × 10ⁿ at or above `value` (at least 2, so that the middle line is whole).
    static func niceCeiling(_ value: Double) -> Double {
        var magnitude = 1.0
        if value <= 2 { return 2 }
        while true {
            for factor in [1.0, 2.0, 5.0] where factor * magnitude >= value { return factor * magnitude }
            magnitude *= 10
        }
    }

    static func format(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}
