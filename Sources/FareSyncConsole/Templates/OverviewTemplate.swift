/// The overview's live part: the counts, the chart, the partitions and the mirror.
enum OverviewTemplate {
    static let text = """
        <div id="live">
        <section aria-labelledby="counts-heading">
        <h2 id="counts-heading">What the store holds</h2>
        <ul class="counts">
        {{#counts}}<li><span class="label">{{label}}</span> <strong>{{value}}</strong></li>{{/counts}}
        </ul>
        <h3>Dead letters by reason</h3>
        {{^hasDeadLetters}}<p>No dead letters.</p>{{/hasDeadLetters}}
        {{#hasDeadLetters}}
        <table><caption class="visually-hidden">Dead letters by reason</caption>
        <thead><tr><th scope="col">Reason</th><th scope="col" class="num">Count</th></tr></thead>
        <tbody>{{#deadLetters}}<tr><td><a href="/console/dead-letters?reason={{reason}}">{{reason}}</a></td><td class="num">{{count}}</td></tr>{{/deadLetters}}</tbody>
        </table>
        {{/hasDeadLetters}}
        {{#deadLettersCapped}}<p>Counted over the first {{deadLettersCapped}} dead letters.</p>{{/deadLettersCapped}}
        </section>
        <section aria-labelledby="rate-heading">
        <h2 id="rate-heading">{{rateTitle}}, last 15 minutes</h2>
        {{{chart}}}
        </section>
        <section aria-labelledby="lag-heading">
        <h2 id="lag-heading">Is the worker keeping up?</h2>
        <p>The store's change feed is at position {{feedHead}}.</p>
        {{^hasPartitions}}<p>No broker is known to this process: the partitions' lag is not shown.</p>{{/hasPartitions}}
        {{#hasPartitions}}
        <table><caption>The group's position in the store against the broker's high watermark</caption>
        <thead><tr><th scope="col">Topic</th><th scope="col" class="num">Partition</th><th scope="col" class="num">Position</th>
        <th scope="col" class="num">High watermark</th><th scope="col" class="num">Lag</th></tr></thead>
        <tbody>{{#partitions}}<tr><td>{{topic}}</td><td class="num">{{partition}}</td><td class="num">{{position}}</td>
        <td class="num">{{highWatermark}}</td><td class="num">{{lag}}</td></tr>{{/partitions}}</tbody>
        </table>
        {{/hasPartitions}}
        <h3>Firestore mirror</h3>
        {{#mirror}}<p>At position {{position}}, {{lagPositions}} behind the feed{{#lagSeconds}} ({{lagSeconds}} s){{/lagSeconds}}.</p>{{/mirror}}
        {{^mirror}}<p>No Firestore mirror runs here.</p>{{/mirror}}
        </section>
        </div>
        """
}
