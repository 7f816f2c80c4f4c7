/// A user's page: who it is, its claims and documents (the live part), and the actions.
enum UserTemplate {
    static let live = """
        <div id="live">
        <section aria-labelledby="account-heading">
        <h2 id="account-heading">Account</h2>
        <dl class="facts">
        <dt>uid</dt><dd>{{uid}}</dd>
        <dt>Email</dt><dd>{{email}}</dd>
        <dt>Phone</dt><dd>{{phone}}</dd>
        <dt>Sign-in provider</dt><dd>{{provider}}</dd>
        <dt>Created</dt><dd>{{{created}}}</dd>
        <dt>Last sign-in</dt><dd>{{{lastSignIn}}}</dd>
        <dt>Disabled</dt><dd>{{disabled}}</dd>
        <dt>Tokens valid since</dt><dd>{{{validSince}}}</dd>
        </dl>
        <h3>Custom claims</h3>
        <pre class="claims">{{claims}}</pre>
        </section>
        <section aria-labelledby="customer-heading">
        <h2 id="customer-heading">Customer document</h2>
        {{#customer}}<p><a href="/console/documents?path=customers/{{uidPath}}">customers/{{uid}}</a></p>{{{customer}}}{{/customer}}
        {{^customer}}<p>No <code>customers/{{uid}}</code> document yet.</p>{{/customer}}
        </section>
        <section aria-labelledby="contracts-heading">
        <h2 id="contracts-heading">Fare contracts</h2>
        {{^contracts}}<p>No fare contracts.</p>{{/contracts}}
        {{#hasContracts}}<ul class="contracts">{{#contracts}}<li><a href="/console/documents?path={{path}}">{{id}}</a> {{summary}}</li>{{/contracts}}</ul>{{/hasContracts}}
        </section>
        <section aria-labelledby="reservations-heading">
        <h2 id="reservations-heading">Reservations</h2>
        {{^reservations}}<p>No open reservations.</p>{{/reservations}}
        {{#hasReservations}}<ul class="reservations">{{#reservations}}<li><a href="/console/documents?path={{path}}">{{id}}</a> {{summary}}</li>{{/reservations}}</ul>{{/hasReservations}}
        </section>
        </div>
        """

    static let actions = """
        <section aria-labelledby="actions-heading" class="actions">
        <h2 id="actions-heading">Actions</h2>
        {{#error}}<p class="error" role="alert">{{error}}</p>{{/error}}
        <div class="buttons">
        <form method="post" action="/console/users/{{uidPath}}/{{toggle}}">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" id="toggle-disabled">{{toggleLabel}}</button>
        </form>
        <form method="post" action="/console/users/{{uidPath}}/revoke">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit" id="revoke">Revoke tokens</button>
        </form>
        </div>
        <form method="post" action="/console/users/{{uidPath}}/claims" class="claims-editor">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label for="claims-json">Custom claims (a JSON object; replaces the user's)</label>
        <textarea id="claims-json" name="claims" rows="4" spellcheck="false">{{claimsEdit}}</textarea>
        <button type="submit" id="save-claims">Save claims</button>
        </form>
        <form method="post" action="/console/users/{{uidPath}}/delete" class="delete">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <input type="checkbox" id="confirm-delete" name="confirm" value="yes" required>
        <label for="confirm-delete">Delete {{uid}} for good</label>
        <button type="submit" id="delete">Delete user</button>
        </form>
        </section>
        """
}
