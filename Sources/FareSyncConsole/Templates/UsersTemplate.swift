/// The users page: the search form, then the live table of users.
enum UsersTemplate {
    static let search = """
        <form method="get" action="/console/users" class="search" role="search">
        <label for="q">Find a user by uid, email, phone, ABT account id or customer number</label>
        <input id="q" name="q" type="search" value="{{query}}">
        <button type="submit">Search</button>
        </form>
        """

    static let live = """
        <div id="live">
        {{#message}}<p>{{message}}</p>{{/message}}
        <table class="users">
        <caption>{{caption}}</caption>
        <thead><tr><th scope="col">uid</th><th scope="col">Email</th><th scope="col">Phone</th><th scope="col">Created</th>
        <th scope="col">Last sign-in</th><th scope="col">Disabled</th><th scope="col">Custom claims</th></tr></thead>
        <tbody>
        {{#users}}<tr><td><a href="/console/users/{{uidPath}}">{{uid}}</a></td><td>{{email}}</td><td>{{phone}}</td>
        <td>{{{created}}}</td><td>{{{lastSignIn}}}</td><td>{{disabled}}</td><td><code>{{claims}}</code></td></tr>{{/users}}
        </tbody>
        </table>
        {{#next}}<p><a href="/console/users?after={{next}}">Next users</a></p>{{/next}}
        </div>
        """
}
