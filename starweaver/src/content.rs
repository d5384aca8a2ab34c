//! Rich tool results: text, images, audio, documents and MCP resources as content parts.
//!
//! A tool's model-facing content may be a list of [`Part`]s. Their canonical JSON is a list
//! of `{"kind": "text" | "image" | "audio" | "document" | "resource_link" | "resource", ...}`
//! objects with binary data in base64, so a session's export keeps them as they are. The
//! history stores that JSON; [`Part::list_from`] reads it back where a provider request or
//! an MCP result is built.
//!
//! ```
//! use starweaver::ToolResult;
//! use starweaver::content::{Image, Part, Text};
//!
//! let result = ToolResult::from(vec![Part::from(Text::new("the chart")), Image::data(b"\x89PNG", "image/png").into()]);
//! let content = result.model_facing_content();
//! assert_eq!(content[1]["kind"], "image");
//! assert_eq!(content[1]["data"], "iVBORw==");
//! assert_eq!(Part::list_from(content).unwrap().len(), 2);
//! ```

#[cfg(any(feature = "mcp", feature = "__http"))]
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One part of a tool's model-facing content.
///
/// ```
/// use starweaver::content::{Part, Text};
///
/// let part = Part::from(Text::new("hi"));
/// assert_eq!(part.kind(), "text");
/// assert_eq!(part.to_json(), serde_json::json!({"kind": "text", "text": "hi"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Fields", try_from = "Fields")]
pub enum Part {
    /// Text.
    Text(Text),
    /// An image, as bytes or a URL.
    Image(Image),
    /// Audio, as bytes.
    Audio(Audio),
    /// A PDF or another file, as bytes or a URL.
    Document(Document),
    /// A reference to a resource the reader may fetch.
    ResourceLink(ResourceLink),
    /// A resource's contents, embedded.
    Resource(Resource),
}

impl Part {
    /// The part's `kind`, as its canonical JSON and errors name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Text(_) => "text",
            Self::Image(_) => "image",
            Self::Audio(_) => "audio",
            Self::Document(_) => "document",
            Self::ResourceLink(_) => "resource_link",
            Self::Resource(_) => "resource",
        }
    }

    /// The parts a tool return's content holds: a list of canonical parts, or one part on
    /// its own (what a tool returning a single part gives). `None` for any other value, so
    /// a plain JSON value that merely has a `kind` key stays a plain value: a part is only
    /// what reads exactly as one (no unknown field, valid base64).
    ///
    /// ```
    /// use serde_json::json;
    /// use starweaver::content::Part;
    ///
    /// let parts = Part::list_from(&json!([{"kind": "text", "text": "hi"}])).unwrap();
    /// assert_eq!(parts[0].kind(), "text");
    /// assert!(Part::list_from(&json!([{"kind": "text", "text": "hi", "score": 3}])).is_none());
    /// assert!(Part::list_from(&json!({"total": 5})).is_none());
    /// ```
    pub fn list_from(content: &Value) -> Option<Vec<Self>> {
        let looks_like_part = |value: &Value| value.get("kind").and_then(Value::as_str).is_some_and(is_kind);
        match content {
            Value::Array(items) if !items.is_empty() && items.iter().all(looks_like_part) => {
                items.iter().map(|item| Self::deserialize(item).ok()).collect()
            }
            Value::Object(_) if looks_like_part(content) => Self::deserialize(content).ok().map(|part| vec![part]),
            _ => None,
        }
    }

    /// The part's canonical JSON.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a part holds only strings and bytes")
    }
}

fn is_kind(kind: &str) -> bool {
    matches!(kind, "text" | "image" | "audio" | "document" | "resource_link" | "resource")
}

/// Text.
///
/// ```
/// use starweaver::content::Text;
///
/// assert_eq!(serde_json::to_value(Text::new("hi")).unwrap(), serde_json::json!({"kind": "text", "text": "hi"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Part", try_from = "Part")]
pub struct Text {
    /// The text.
    pub text: String,
}

impl Text {
    /// A text part.
    pub fn new(text: impl Into<String>) -> Self {
        Self { text: text.into() }
    }
}

/// Where an image's or a document's content is: its bytes, or a URL the provider fetches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The bytes, with their media type (`image/png`, `application/pdf`).
    Data {
        /// The content.
        data: Vec<u8>,
        /// Its media type.
        media_type: String,
    },
    /// A URL, with the media type when it is known.
    Url {
        /// The URL.
        url: String,
        /// Its media type, if known.
        media_type: Option<String>,
    },
}

impl Source {
    /// The media type, when known.
    pub fn media_type(&self) -> Option<&str> {
        match self {
            Self::Data { media_type, .. } => Some(media_type),
            Self::Url { media_type, .. } => media_type.as_deref(),
        }
    }
}

/// An image.
///
/// ```
/// use starweaver::content::{Image, Source};
///
/// let png = Image::data(*b"\x89PNG", "image/png");
/// assert_eq!(png.source.media_type(), Some("image/png"));
/// let json = serde_json::to_value(&png).unwrap();
/// assert_eq!(json, serde_json::json!({"kind": "image", "data": "iVBORw==", "media_type": "image/png"}));
/// assert!(matches!(Image::url("https://example.com/a.png").source, Source::Url { .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Part", try_from = "Part")]
pub struct Image {
    /// Its bytes or URL.
    pub source: Source,
}

impl Image {
    /// An image from its bytes.
    pub fn data(data: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self { source: Source::Data { data: data.into(), media_type: media_type.into() } }
    }

    /// An image at a URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self { source: Source::Url { url: url.into(), media_type: None } }
    }
}

/// Audio (providers and MCP take it as bytes only).
///
/// ```
/// use starweaver::content::Audio;
///
/// let json = serde_json::to_value(Audio::new(*b"RIFF", "audio/wav")).unwrap();
/// assert_eq!(json, serde_json::json!({"kind": "audio", "data": "UklGRg==", "media_type": "audio/wav"}));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Part", try_from = "Part")]
pub struct Audio {
    /// The bytes (base64 in JSON).
    pub data: Vec<u8>,
    /// Their media type (`audio/wav`, `audio/mpeg`).
    pub media_type: String,
}

impl Audio {
    /// Audio from its bytes.
    pub fn new(data: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self { data: data.into(), media_type: media_type.into() }
    }
}

/// A PDF or another file.
///
/// ```
/// use starweaver::content::Document;
///
/// let pdf = Document::data(*b"%PDF-", "application/pdf").with_title("Q3").with_filename("q3.pdf");
/// assert_eq!(serde_json::to_value(pdf).unwrap()["filename"], "q3.pdf");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Part", try_from = "Part")]
pub struct Document {
    /// Its bytes or URL.
    pub source: Source,
    /// A title, for providers that show one.
    pub title: Option<String>,
    /// A file name, for providers that want one.
    pub filename: Option<String>,
}

impl Document {
    /// A document from its bytes.
    pub fn data(data: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self { source: Source::Data { data: data.into(), media_type: media_type.into() }, title: None, filename: None }
    }

    /// A document at a URL.
    pub fn url(url: impl Into<String>) -> Self {
        Self { source: Source::Url { url: url.into(), media_type: None }, title: None, filename: None }
    }

    /// With a title.
    #[must_use]
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With a file name.
    #[must_use]
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = Some(filename.into());
        self
    }
}

/// A reference to a resource (MCP's `resource_link`).
///
/// ```
/// use starweaver::content::ResourceLink;
///
/// let link = ResourceLink { description: Some("notes".into()), ..ResourceLink::new("file:///a.txt", "a") };
/// assert_eq!(serde_json::to_value(link).unwrap()["kind"], "resource_link");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Part", try_from = "Part")]
pub struct ResourceLink {
    /// Where the resource is.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Its media type, if known.
    pub media_type: Option<String>,
}

impl ResourceLink {
    /// A link to `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self { uri: uri.into(), name: name.into(), description: None, media_type: None }
    }
}

/// A resource's contents, embedded (MCP's embedded `resource`).
///
/// ```
/// use starweaver::content::{Resource, ResourceContents};
///
/// assert_eq!(Resource::text("file:///a.txt", "bee").contents, ResourceContents::Text("bee".into()));
/// let blob = serde_json::to_value(Resource::blob("file:///b", [0u8, 1], "application/octet-stream")).unwrap();
/// assert_eq!(blob["blob"], "AAE=");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "Part", try_from = "Part")]
pub struct Resource {
    /// The resource's URI.
    pub uri: String,
    /// Its media type, if known.
    pub media_type: Option<String>,
    /// Its text or bytes.
    pub contents: ResourceContents,
}

/// What an embedded resource holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text.
    Text(String),
    /// Bytes (base64 in JSON).
    Blob(Vec<u8>),
}

/// The canonical fields of an embedded resource: `uri`, `media_type` when known, and
/// `text` or `blob`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceFields {
    uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "optional_base64")]
    blob: Option<Vec<u8>>,
}

impl From<Resource> for ResourceFields {
    fn from(resource: Resource) -> Self {
        let (text, blob) = match resource.contents {
            ResourceContents::Text(text) => (Some(text), None),
            ResourceContents::Blob(blob) => (None, Some(blob)),
        };
        Self { uri: resource.uri, media_type: resource.media_type, text, blob }
    }
}

impl TryFrom<ResourceFields> for Resource {
    type Error = String;

    fn try_from(fields: ResourceFields) -> Result<Self, String> {
        let contents = match (fields.text, fields.blob) {
            (Some(text), None) => ResourceContents::Text(text),
            (None, Some(blob)) => ResourceContents::Blob(blob),
            (Some(_), Some(_)) => return Err("a resource has `text` or `blob`, not both".into()),
            (None, None) => return Err("a resource needs `text` or `blob`".into()),
        };
        Ok(Self { uri: fields.uri, media_type: fields.media_type, contents })
    }
}

impl Resource {
    /// A text resource.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self { uri: uri.into(), media_type: None, contents: ResourceContents::Text(text.into()) }
    }

    /// A binary resource.
    pub fn blob(uri: impl Into<String>, data: impl Into<Vec<u8>>, media_type: impl Into<String>) -> Self {
        Self { uri: uri.into(), media_type: Some(media_type.into()), contents: ResourceContents::Blob(data.into()) }
    }
}

/// The canonical fields of an image or a document: `data` and `media_type`, or `url` (and
/// `media_type` when known); a document adds `title` and `filename`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MediaFields {
    #[serde(default, skip_serializing_if = "Option::is_none", with = "optional_base64")]
    data: Option<Vec<u8>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    filename: Option<String>,
}

impl MediaFields {
    fn of(source: Source) -> Self {
        let (data, url, media_type) = match source {
            Source::Data { data, media_type } => (Some(data), None, Some(media_type)),
            Source::Url { url, media_type } => (None, Some(url), media_type),
        };
        Self { data, url, media_type, title: None, filename: None }
    }

    fn source(data: Option<Vec<u8>>, url: Option<String>, media_type: Option<String>) -> Result<Source, String> {
        match (data, url, media_type) {
            (Some(data), None, Some(media_type)) => Ok(Source::Data { data, media_type }),
            (Some(_), None, None) => Err("`data` needs its `media_type`".into()),
            (None, Some(url), media_type) => Ok(Source::Url { url, media_type }),
            (Some(_), Some(_), _) => Err("give `data` or `url`, not both".into()),
            (None, None, _) => Err("give `data` (with `media_type`) or `url`".into()),
        }
    }
}

impl From<Image> for MediaFields {
    fn from(image: Image) -> Self {
        Self::of(image.source)
    }
}

impl TryFrom<MediaFields> for Image {
    type Error = String;

    fn try_from(fields: MediaFields) -> Result<Self, String> {
        if fields.title.is_some() || fields.filename.is_some() {
            return Err("an image has no `title` or `filename` (a document has)".into());
        }
        Ok(Self { source: MediaFields::source(fields.data, fields.url, fields.media_type)? })
    }
}

impl From<Document> for MediaFields {
    fn from(document: Document) -> Self {
        Self { title: document.title, filename: document.filename, ..Self::of(document.source) }
    }
}

impl TryFrom<MediaFields> for Document {
    type Error = String;

    fn try_from(fields: MediaFields) -> Result<Self, String> {
        let source = MediaFields::source(fields.data, fields.url, fields.media_type)?;
        Ok(Self { source, title: fields.title, filename: fields.filename })
    }
}

/// The canonical JSON of a part, by kind. Every public type reads and writes through it,
/// so a lone [`Image`] serialises with its `kind` just as it does inside a [`Part`].
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Fields {
    Text(TextFields),
    Image(MediaFields),
    Audio(AudioFields),
    Document(MediaFields),
    ResourceLink(LinkFields),
    Resource(ResourceFields),
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TextFields {
    text: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct AudioFields {
    #[serde(with = "base64_data")]
    data: Vec<u8>,
    media_type: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkFields {
    uri: String,
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    media_type: Option<String>,
}

impl From<Part> for Fields {
    fn from(part: Part) -> Self {
        match part {
            Part::Text(Text { text }) => Self::Text(TextFields { text }),
            Part::Image(image) => Self::Image(image.into()),
            Part::Audio(Audio { data, media_type }) => Self::Audio(AudioFields { data, media_type }),
            Part::Document(document) => Self::Document(document.into()),
            Part::ResourceLink(ResourceLink { uri, name, description, media_type }) => {
                Self::ResourceLink(LinkFields { uri, name, description, media_type })
            }
            Part::Resource(resource) => Self::Resource(resource.into()),
        }
    }
}

impl TryFrom<Fields> for Part {
    type Error = String;

    fn try_from(fields: Fields) -> Result<Self, String> {
        Ok(match fields {
            Fields::Text(TextFields { text }) => Self::Text(Text { text }),
            Fields::Image(fields) => Self::Image(fields.try_into()?),
            Fields::Audio(AudioFields { data, media_type }) => Self::Audio(Audio { data, media_type }),
            Fields::Document(fields) => Self::Document(fields.try_into()?),
            Fields::ResourceLink(LinkFields { uri, name, description, media_type }) => {
                Self::ResourceLink(ResourceLink { uri, name, description, media_type })
            }
            Fields::Resource(fields) => Self::Resource(fields.try_into()?),
        })
    }
}

/// Each part type as a [`Part`], and back (naming the kind found when it is another).
macro_rules! part_conversions {
    ($($variant:ident: $kind:literal),*) => {$(
        impl From<$variant> for Part {
            fn from(part: $variant) -> Self {
                Self::$variant(part)
            }
        }

        impl TryFrom<Part> for $variant {
            type Error = String;

            fn try_from(part: Part) -> Result<Self, String> {
                match part {
                    Part::$variant(part) => Ok(part),
                    other => Err(format!(concat!("expected a `", $kind, "` part, not `{}`"), other.kind())),
                }
            }
        }
    )*};
}

part_conversions!(Text: "text", Image: "image", Audio: "audio", Document: "document",
    ResourceLink: "resource_link", Resource: "resource");

/// Bytes as standard, padded base64 (what MCP and every provider expect). Decoding is
/// strict, so what it accepts it writes back unchanged.
mod base64_data {
    use base64::Engine as _;

    use super::{Deserialize, Deserializer, STANDARD, Serializer};

    pub(super) fn serialize<S: Serializer>(data: &[u8], serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&STANDARD.encode(data))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u8>, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        STANDARD.decode(text.as_bytes()).map_err(|e| serde::de::Error::custom(format!("invalid base64 data: {e}")))
    }
}

mod optional_base64 {
    use super::{Deserialize, Deserializer, Serializer, base64_data};

    #[allow(clippy::ref_option)] // serde's `with` hands the field by reference
    pub(super) fn serialize<S: Serializer>(data: &Option<Vec<u8>>, serializer: S) -> Result<S::Ok, S::Error> {
        match data {
            Some(data) => base64_data::serialize(data, serializer),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<u8>>, D::Error> {
        #[derive(Deserialize)]
        struct Data(#[serde(with = "base64_data")] Vec<u8>);
        Ok(Option::<Data>::deserialize(deserializer)?.map(|Data(data)| data))
    }
}

/// Base64 of some bytes, as data URLs and wire formats carry them.
#[cfg(any(feature = "mcp", feature = "__http"))]
pub(crate) fn base64(data: &[u8]) -> String {
    STANDARD.encode(data)
}

/// Bytes from standard base64 (what MCP sends).
///
/// # Errors
/// The text is not standard, padded base64.
#[cfg(feature = "mcp")]
pub(crate) fn from_base64(text: &str) -> Result<Vec<u8>, String> {
    STANDARD.decode(text).map_err(|e| format!("invalid base64 data: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn every_kind() -> Value {
        json!([
            {"kind": "text", "text": "the chart"},
            {"kind": "image", "data": "iVBORw==", "media_type": "image/png"},
            {"kind": "image", "url": "https://example.com/a.png"},
            {"kind": "audio", "data": "UklGRg==", "media_type": "audio/wav"},
            {"kind": "document", "data": "JVBERi0=", "media_type": "application/pdf", "title": "Report", "filename": "r.pdf"},
            {"kind": "document", "url": "https://example.com/r.pdf", "media_type": "application/pdf"},
            {"kind": "resource_link", "uri": "file:///a.txt", "name": "a", "description": "A", "media_type": "text/plain"},
            {"kind": "resource", "uri": "file:///b.txt", "media_type": "text/plain", "text": "bee"},
            {"kind": "resource", "uri": "file:///c.bin", "blob": "AAE="},
        ])
    }

    #[test]
    fn every_kind_round_trips_exactly() {
        let json = every_kind();
        let parts = Part::list_from(&json).expect("every item is a part");
        let kinds: Vec<&str> = parts.iter().map(Part::kind).collect();
        assert_eq!(
            kinds,
            ["text", "image", "image", "audio", "document", "document", "resource_link", "resource", "resource"]
        );
        assert_eq!(parts[1], Image::data(b"\x89PNG".to_vec(), "image/png").into());
        assert_eq!(
            parts[8],
            Resource { uri: "file:///c.bin".into(), media_type: None, contents: ResourceContents::Blob(vec![0, 1]) }
                .into()
        );
        assert_eq!(serde_json::to_value(&parts).unwrap(), json);
    }

    #[test]
    fn a_lone_part_writes_its_kind_and_reads_back_only_as_its_own_kind() {
        let image = Image::url("https://example.com/a.png");
        let json = serde_json::to_value(&image).unwrap();
        assert_eq!(json, json!({"kind": "image", "url": "https://example.com/a.png"}));
        assert_eq!(serde_json::from_value::<Image>(json).unwrap(), image);
        let err = serde_json::from_value::<Image>(json!({"kind": "text", "text": "a"})).unwrap_err();
        assert!(err.to_string().contains("expected a `image` part, not `text`"), "{err}");
    }

    #[test]
    fn values_that_are_not_exactly_parts_stay_plain_values() {
        for value in [
            json!([]),
            json!([{"kind": "text", "text": "a"}, 3]),
            json!([{"kind": "text", "text": "a", "score": 1}]),
            json!([{"kind": "image", "data": "not base64!", "media_type": "image/png"}]),
            json!([{"kind": "document", "id": 7}]),
            json!({"kind": "shout"}),
            json!("text"),
        ] {
            assert!(Part::list_from(&value).is_none(), "{value}");
        }
        assert_eq!(Part::list_from(&json!({"kind": "text", "text": "a"})), Some(vec![Text::new("a").into()]));
    }

    #[test]
    fn a_malformed_part_is_an_error_that_says_what_is_missing() {
        let read = |value: Value| serde_json::from_value::<Part>(value).unwrap_err().to_string();
        assert!(read(json!({"kind": "image", "data": "iVBORw=="})).contains("`data` needs its `media_type`"));
        assert!(read(json!({"kind": "image"})).contains("give `data` (with `media_type`) or `url`"));
        assert!(read(json!({"kind": "image", "url": "u", "data": "AA==", "media_type": "m"})).contains("not both"));
        assert!(read(json!({"kind": "audio", "data": "%%", "media_type": "audio/wav"})).contains("invalid base64"));
        assert!(read(json!({"kind": "image", "url": "u", "title": "t"})).contains("a document has"));
        assert!(read(json!({"kind": "resource", "uri": "u"})).contains("`text` or `blob`"));
    }
}
