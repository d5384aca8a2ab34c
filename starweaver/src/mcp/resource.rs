//! Resources served to MCP clients: static ones at a fixed URI, and templated ones
//! (`notes://{id}`) whose reader gets the URI's variables. `resources/read` finds the
//! resource of that exact URI first, then the first template, in the order given, that
//! gives it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use rmcp::model::{Resource as McpWireResource, ResourceTemplate as McpWireTemplate};

use super::completion::{Completers, CompletionRequest};
use super::uri_template::UriTemplate;
use crate::content::Part;
use crate::tool::ToolError;

/// What a resource's reader is asked: the URI read and, for a template, its variables.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ResourceRequest {
    /// The URI the client reads.
    pub uri: String,
    /// A template's variables as the URI gives them, decoded; empty for a static resource.
    pub variables: HashMap<String, String>,
}

impl ResourceRequest {
    /// A variable's value, if the template has it.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(name).map(String::as_str)
    }
}

/// A reader: the resource's contents, as parts (text, bytes, embedded resources).
pub(crate) type Reader = Arc<dyn Fn(ResourceRequest) -> BoxFuture<'static, Result<Vec<Part>, ToolError>> + Send + Sync>;

/// What a listing says of a resource or a template.
#[derive(Debug, Clone, Default)]
struct About {
    name: String,
    title: Option<String>,
    description: Option<String>,
    mime_type: Option<String>,
}

/// A resource at a fixed URI, served by [`McpServiceBuilder::resource`](super::McpServiceBuilder::resource).
///
/// The reader gives the contents as parts: [`Text`](crate::content::Text) for text, an
/// [`Image`](crate::content::Image), [`Audio`](crate::content::Audio) or
/// [`Document`](crate::content::Document) with bytes for a blob of their media type, or
/// [`Resource`](crate::content::Resource)s to set the URI and media type of each. A reader
/// that fails answers the read with a JSON-RPC error carrying its message:
/// [`ToolError::invalid_arguments`] as invalid params, `ToolErrorKind::NotFound` as
/// "resource not found" (-32002), anything else as an internal error.
///
/// ```
/// use starweaver::content::Text;
/// use starweaver::mcp::McpResource;
/// use starweaver::ToolError;
///
/// let readme = McpResource::new("docs://readme", "readme", |_request| async {
///     Ok::<_, ToolError>([Text::new("# Hello")])
/// })
/// .description("The project's README")
/// .mime_type("text/markdown");
/// assert_eq!(readme.uri(), "docs://readme");
/// ```
#[derive(Clone)]
pub struct McpResource {
    uri: String,
    about: About,
    pub(crate) read: Reader,
}

/// A templated resource (RFC 6570 level 1, `notes://{folder}/{id}`), served by
/// [`McpServiceBuilder::resource_template`](super::McpServiceBuilder::resource_template):
/// a read of any URI the template gives calls the reader with the URI's variables. Its
/// variables may have completers. Readers answer as [`McpResource`]'s do.
///
/// ```
/// use starweaver::content::Text;
/// use starweaver::mcp::McpResourceTemplate;
/// use starweaver::ToolError;
///
/// let user = McpResourceTemplate::new("users://{id}/profile", "profile", |request| async move {
///     let id = request.variable("id").unwrap_or_default().to_owned();
///     Ok::<_, ToolError>([Text::new(format!("the profile of {id}"))])
/// })
/// .mime_type("text/plain")
/// .complete("id", |typed| async move {
///     Ok(["alice", "bob"].into_iter().filter(|id| id.starts_with(&typed.value)).map(String::from).collect())
/// });
/// assert_eq!(user.uri_template(), "users://{id}/profile");
/// ```
#[derive(Clone)]
pub struct McpResourceTemplate {
    uri_template: String,
    about: About,
    pub(crate) read: Reader,
    pub(crate) completers: Completers,
}

/// Wraps a reader into its shared form.
fn reader<F, Fut, C>(read: F) -> Reader
where
    F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
    C: IntoIterator,
    C::Item: Into<Part>,
{
    Arc::new(move |request| read(request).map(|read| Ok(read?.into_iter().map(Into::into).collect())).boxed())
}

/// The descriptive setters both kinds share.
macro_rules! describe {
    ($type:ident) => {
        impl $type {
            /// A human-readable title for it.
            #[must_use]
            pub fn title(mut self, title: impl Into<String>) -> Self {
                self.about.title = Some(title.into());
                self
            }

            /// What it holds, for the client (and its model) to decide whether to read it.
            #[must_use]
            pub fn description(mut self, description: impl Into<String>) -> Self {
                self.about.description = Some(description.into());
                self
            }

            /// Its media type (`text/markdown`, `image/png`): listed, and given to text
            /// contents that name none.
            #[must_use]
            pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
                self.about.mime_type = Some(mime_type.into());
                self
            }

            /// Its name, as listed.
            pub fn name(&self) -> &str {
                &self.about.name
            }
        }
    };
}

describe!(McpResource);
describe!(McpResourceTemplate);

impl McpResource {
    /// A resource at `uri` named `name`, whose contents `read` gives.
    pub fn new<F, Fut, C>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
        C: IntoIterator,
        C::Item: Into<Part>,
    {
        Self { uri: uri.into(), about: About { name: name.into(), ..About::default() }, read: reader(read) }
    }

    /// Its URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }
}

impl McpResourceTemplate {
    /// A template of URIs named `name`, whose contents `read` gives from a URI's variables.
    pub fn new<F, Fut, C>(uri_template: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<C, ToolError>> + Send + 'static,
        C: IntoIterator,
        C::Item: Into<Part>,
    {
        let about = About { name: name.into(), ..About::default() };
        Self { uri_template: uri_template.into(), about, read: reader(read), completers: Completers::default() }
    }

    /// Its URI template.
    pub fn uri_template(&self) -> &str {
        &self.uri_template
    }

    /// The template's variables, in order, as its reader gets them.
    ///
    /// ```
    /// # use starweaver::mcp::McpResourceTemplate;
    /// # let read = |_| async { Ok::<_, starweaver::ToolError>(Vec::<starweaver::content::Part>::new()) };
    /// let files = McpResourceTemplate::new("files://{dir}/{name}", "file", read);
    /// assert_eq!(files.variables().unwrap(), ["dir", "name"]);
    /// ```
    ///
    /// # Errors
    /// The template is not RFC 6570 level 1: what [`build`](super::McpServiceBuilder::build)
    /// would refuse it with.
    pub fn variables(&self) -> crate::Result<Vec<String>> {
        Ok(self.parse()?.variables().map(str::to_owned).collect())
    }

    fn parse(&self) -> crate::Result<UriTemplate> {
        UriTemplate::parse(&self.uri_template).map_err(|message| crate::Error::InvalidMcpItem {
            what: format!("resource template `{}`", self.uri_template),
            message,
        })
    }

    /// Completes the variable `variable`: `complete` gives the values that fit what the
    /// user has typed, best first (MCP sends the first 100). A variable the template does
    /// not have is an error at build.
    #[must_use]
    pub fn complete<F, Fut>(mut self, variable: impl Into<String>, complete: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, ToolError>> + Send + 'static,
    {
        self.completers.insert(variable, complete);
        self
    }
}

/// The served resources and templates, checked, and how a URI finds its reader.
#[derive(Clone, Default)]
pub(crate) struct Resources {
    fixed: HashMap<String, McpResource>,
    /// In the order given: the first that gives a URI reads it.
    templates: Vec<(UriTemplate, McpResourceTemplate)>,
    listed: Arc<[McpWireResource]>,
    listed_templates: Arc<[McpWireTemplate]>,
}

impl Resources {
    /// Checks and indexes `resources` and `templates`.
    ///
    /// # Errors
    /// Two resources of one URI, two templates of one template string, a template that is
    /// not RFC 6570 level 1, or a completer for a variable its template lacks.
    pub(crate) fn new(resources: Vec<McpResource>, templates: Vec<McpResourceTemplate>) -> crate::Result<Self> {
        let invalid = |what: String, message: String| crate::Error::InvalidMcpItem { what, message };
        let listed = resources.iter().map(|r| wire_resource(&r.uri, &r.about)).collect();
        let mut fixed = HashMap::new();
        for resource in resources {
            let what = format!("resource `{}`", resource.uri);
            if fixed.insert(resource.uri.clone(), resource).is_some() {
                return Err(invalid(what, "two resources have this URI".into()));
            }
        }
        let listed_templates = templates.iter().map(|t| wire_template(&t.uri_template, &t.about)).collect();
        let mut parsed: Vec<(UriTemplate, McpResourceTemplate)> = Vec::new();
        for template in templates {
            let what = format!("resource template `{}`", template.uri_template);
            let uri_template = template.parse()?;
            if parsed.iter().any(|(_, seen)| seen.uri_template == template.uri_template) {
                return Err(invalid(what, "two resource templates have this template".into()));
            }
            if let Some(unknown) = template.completers.names().find(|n| !uri_template.variables().any(|v| v == *n)) {
                return Err(invalid(
                    what,
                    format!("a completer is given for `{unknown}`, which is not one of its variables"),
                ));
            }
            parsed.push((uri_template, template));
        }
        Ok(Self { fixed, templates: parsed, listed, listed_templates })
    }

    /// Whether there is anything to serve (and so a `resources` capability to declare).
    pub(crate) fn is_empty(&self) -> bool {
        self.fixed.is_empty() && self.templates.is_empty()
    }

    /// Whether there are templates (whose variables may complete).
    pub(crate) fn has_templates(&self) -> bool {
        !self.templates.is_empty()
    }

    /// `resources/list`: the static resources, in the order given.
    pub(crate) fn listed(&self) -> Vec<McpWireResource> {
        self.listed.to_vec()
    }

    /// `resources/templates/list`: the templates, in the order given.
    pub(crate) fn listed_templates(&self) -> Vec<McpWireTemplate> {
        self.listed_templates.to_vec()
    }

    /// What reads `uri`: its reader, the request to give it, and its declared media type.
    pub(crate) fn find(&self, uri: &str) -> Option<(Reader, ResourceRequest, Option<String>)> {
        let request = |variables| ResourceRequest { uri: uri.to_owned(), variables };
        if let Some(resource) = self.fixed.get(uri) {
            return Some((resource.read.clone(), request(HashMap::new()), resource.about.mime_type.clone()));
        }
        self.templates.iter().find_map(|(parsed, template)| {
            let variables = parsed.matches(uri)?;
            Some((template.read.clone(), request(variables), template.about.mime_type.clone()))
        })
    }

    /// The completers of the template written `uri_template`, if one is served.
    pub(crate) fn completers(&self, uri_template: &str) -> Option<&Completers> {
        self.templates.iter().find(|(_, t)| t.uri_template == uri_template).map(|(_, t)| &t.completers)
    }

    /// Whether `uri` is a static resource's (which completes nothing, but is no error).
    pub(crate) fn is_fixed(&self, uri: &str) -> bool {
        self.fixed.contains_key(uri)
    }
}

fn wire_resource(uri: &str, about: &About) -> McpWireResource {
    let mut resource = McpWireResource::new(uri, about.name.clone());
    resource.title.clone_from(&about.title);
    resource.description.clone_from(&about.description);
    resource.mime_type.clone_from(&about.mime_type);
    resource
}

fn wire_template(uri_template: &str, about: &About) -> McpWireTemplate {
    let mut template = McpWireTemplate::new(uri_template, about.name.clone());
    template.title.clone_from(&about.title);
    template.description.clone_from(&about.description);
    template.mime_type.clone_from(&about.mime_type);
    template
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::Text;

    fn text(body: &'static str) -> impl Fn(ResourceRequest) -> futures::future::Ready<Result<[Text; 1], ToolError>> {
        move |_| futures::future::ready(Ok([Text::new(body)]))
    }

    #[test]
    fn a_uri_finds_its_static_resource_first_then_the_first_template_that_gives_it() {
        let resources = Resources::new(
            vec![McpResource::new("notes://today", "today", text("t")).mime_type("text/markdown")],
            vec![
                McpResourceTemplate::new("notes://{id}", "note", text("n")),
                McpResourceTemplate::new("notes://{id}/raw", "raw", text("r")),
            ],
        )
        .unwrap();
        let (_, request, media_type) = resources.find("notes://today").unwrap();
        assert_eq!((request.variables.len(), media_type.as_deref()), (0, Some("text/markdown")));
        let (_, request, _) = resources.find("notes://42").unwrap();
        assert_eq!(request.variable("id"), Some("42"));
        let (_, request, _) = resources.find("notes://42/raw").unwrap();
        assert_eq!(request.uri, "notes://42/raw");
        assert!(resources.find("other://42").is_none());
        assert_eq!(resources.listed().len(), 1);
        assert_eq!(resources.listed_templates()[1].uri_template, "notes://{id}/raw");
    }

    #[test]
    fn duplicates_bad_templates_and_stray_completers_are_named_at_build() {
        let error = |resources, templates| Resources::new(resources, templates).err().unwrap().to_string();
        let twice = || McpResource::new("a://x", "x", text("x"));
        assert_eq!(error(vec![twice(), twice()], vec![]), "invalid MCP resource `a://x`: two resources have this URI");
        let template = |t: &str| McpResourceTemplate::new(t, "t", text("t"));
        assert_eq!(
            error(vec![], vec![template("a://{id")]),
            "invalid MCP resource template `a://{id`: a `{` is never closed"
        );
        assert_eq!(
            error(vec![], vec![template("a://{id}").complete("name", |_| async { Ok(Vec::new()) })]),
            "invalid MCP resource template `a://{id}`: a completer is given for `name`, which is not one of its variables"
        );
    }
}
