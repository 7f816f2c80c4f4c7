/// The page every console page sits in: the skip link, the navigation, the main landmark.
enum LayoutTemplate {
    static let text = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · FareSync console</title>
        <link rel="stylesheet" href="/console/assets/console.css">
        <script src="/console/assets/console.js" defer></script>
        </head>
        <body{{#stream}} data-stream="{{stream}}"{{/stream}}>
        <a class="skip" href="#main">Skip to content</a>
        <header class="top">
        <p class="brand"><a href="/console/">FareSync console</a></p>
        {{#hasNav}}
        <nav aria-label="Console">
        <ul>
        {{#nav}}<li><a href="{{href}}"{{#current}} aria-current="page"{{/current}}>{{label}}</a></li>{{/nav}}
        </ul>
        </nav>
        {{/hasNav}}
        {{#signedIn}}
        <form method="post" action="/console/sign-out" class="sign-out">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <button type="submit">Sign out</button>
        </form>
        {{/signedIn}}
        </header>
        <main id="main" tabindex="-1">
        <h1>{{title}}</h1>
        {{{body}}}
        </main>
        <p class="live-status" role="status" id="live-status"></p>
        </body>
        </html>
        """
}
