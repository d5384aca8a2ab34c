//! Content parts as MCP content blocks, and back.
//!
//! MCP has no image or document by URL and no document type: an image or document at a URL
//! goes as a `resource_link` to it, and a document's bytes as an embedded `resource` with
//! a blob (MCP's own form for files). Coming back, those are links and resources, as sent.

use rmcp::model::{ContentBlock, Resource as McpResource, ResourceContents};

use crate::content::{self, Audio, Document, Image, Part, Resource, ResourceLink, Source, Text};

/// A part as the MCP content block a client reads.
pub(crate) fn to_block(part: Part) -> ContentBlock {
    match part {
        Part::Text(Text { text }) => ContentBlock::text(text),
        Part::Image(Image { source: Source::Data { data, media_type } }) => {
            ContentBlock::image(content::base64(&data), media_type)
        }
        Part::Audio(Audio { data, media_type }) => ContentBlock::audio(content::base64(&data), media_type),
        Part::Image(Image { source: Source::Url { url, media_type } }) => link(url.clone(), url, media_type),
        Part::Document(Document { source: Source::Url { url, media_type }, title, filename }) => {
            let name = filename.or(title).unwrap_or_else(|| url.clone());
            link(url, name, media_type)
        }
        Part::Document(Document { source: Source::Data { data, media_type }, filename, title }) => {
            let name = filename.or(title).unwrap_or_else(|| "document".to_owned());
            let blob = ResourceContents::blob(content::base64(&data), format!("file:///{name}"));
            ContentBlock::resource(blob.with_mime_type(media_type))
        }
        Part::ResourceLink(ResourceLink { uri, name, description, media_type }) => {
            let mut resource = McpResource::new(uri, name);
            resource.description = description;
            resource.mime_type = media_type;
            ContentBlock::resource_link(resource)
        }
        Part::Resource(resource) => ContentBlock::resource(embedded(resource)),
    }
}

/// An embedded resource's contents as MCP's.
fn embedded(Resource { uri, media_type, contents }: Resource) -> ResourceContents {
    match contents {
        content::ResourceContents::Text(text) => {
            ResourceContents::TextResourceContents { uri, mime_type: media_type, text, meta: None }
        }
        content::ResourceContents::Blob(blob) => ResourceContents::BlobResourceContents {
            uri,
            mime_type: media_type,
            blob: content::base64(&blob),
            meta: None,
        },
    }
}

/// A part as the contents of a served resource read at `uri`, whose declared media type
/// is `media_type`: text as text, bytes (an image's, audio's or document's) as a blob of
/// their own media type, an embedded resource as it is (the declared media type where it
/// names none).
///
/// # Errors
/// A part that refers to its contents instead of holding them (a link, or an image or
/// document at a URL), named.
pub(crate) fn to_contents(part: Part, uri: &str, media_type: Option<&str>) -> Result<ResourceContents, String> {
    let declared = || media_type.map(str::to_owned);
    let blob = |data: &[u8], media_type: String| ResourceContents::BlobResourceContents {
        uri: uri.to_owned(),
        mime_type: Some(media_type),
        blob: content::base64(data),
        meta: None,
    };
    Ok(match part {
        Part::Text(Text { text }) => {
            ResourceContents::TextResourceContents { uri: uri.to_owned(), mime_type: declared(), text, meta: None }
        }
        Part::Image(Image { source: Source::Data { data, media_type } })
        | Part::Audio(Audio { data, media_type })
        | Part::Document(Document { source: Source::Data { data, media_type }, .. }) => blob(&data, media_type),
        Part::Resource(resource) => {
            embedded(Resource { media_type: resource.media_type.clone().or_else(declared), ..resource })
        }
        other @ (Part::Image(_) | Part::Document(_) | Part::ResourceLink(_)) => {
            return Err(format!(
                "a `{}` part by reference (a URL or a link) cannot be a resource's contents; give text or bytes",
                other.kind()
            ));
        }
    })
}

fn link(uri: String, name: String, media_type: Option<String>) -> ContentBlock {
    let mut resource = McpResource::new(uri, name);
    resource.mime_type = media_type;
    ContentBlock::resource_link(resource)
}

/// An MCP content block as a part.
///
/// # Errors
/// Binary data that is not base64, or a block of a kind this version does not know; the
/// message names which.
pub(crate) fn from_block(block: &ContentBlock) -> Result<Part, String> {
    let bytes = |what: &str, data: &str| content::from_base64(data).map_err(|e| format!("the {what} block: {e}"));
    Ok(match block {
        ContentBlock::Text(text) => Text::new(text.text.clone()).into(),
        ContentBlock::Image(image) => Image::data(bytes("image", &image.data)?, image.mime_type.clone()).into(),
        ContentBlock::Audio(audio) => Audio::new(bytes("audio", &audio.data)?, audio.mime_type.clone()).into(),
        ContentBlock::ResourceLink(link) => ResourceLink {
            uri: link.uri.clone(),
            name: link.name.clone(),
            description: link.description.clone(),
            media_type: link.mime_type.clone(),
        }
        .into(),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, mime_type, text, .. } => Resource {
                uri: uri.clone(),
                media_type: mime_type.clone(),
                contents: content::ResourceContents::Text(text.clone()),
            }
            .into(),
            ResourceContents::BlobResourceContents { uri, mime_type, blob, .. } => Resource {
                uri: uri.clone(),
                media_type: mime_type.clone(),
                contents: content::ResourceContents::Blob(bytes("resource", blob)?),
            }
            .into(),
            // rmcp's enum is non-exhaustive: a later MCP revision may add kinds.
            _ => return Err("an embedded resource of a kind this version cannot read".to_owned()),
        },
        // rmcp's enum is non-exhaustive: a later MCP revision may add kinds.
        _ => return Err("a content block of a kind this version cannot read".to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_are_mcp_shaped_and_come_back_as_the_same_parts() {
        let parts: Vec<Part> = vec![
            Text::new("hi").into(),
            Image::data(b"\x89PNG".to_vec(), "image/png").into(),
            Audio::new(b"RIFF".to_vec(), "audio/wav").into(),
            ResourceLink { description: Some("A".into()), ..ResourceLink::new("file:///a.txt", "a") }.into(),
            Resource::text("file:///b.txt", "bee").into(),
            Resource::blob("file:///c.bin", [0u8, 1], "application/octet-stream").into(),
        ];
        let blocks: Vec<ContentBlock> = parts.iter().cloned().map(to_block).collect();
        assert_eq!(
            serde_json::to_value(&blocks).unwrap(),
            json!([
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///a.txt", "name": "a", "description": "A"},
                {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
                {"type": "resource", "resource": {"uri": "file:///c.bin", "mimeType": "application/octet-stream", "blob": "AAE="}},
            ])
        );
        let back: Vec<Part> = blocks.iter().map(|b| from_block(b).unwrap()).collect();
        assert_eq!(back, parts);
    }

    #[test]
    fn urls_become_links_and_a_document_an_embedded_blob() {
        let document = Document::data(b"%PDF-".to_vec(), "application/pdf").with_filename("r.pdf");
        let blocks = [to_block(Image::url("https://e.com/a.png").into()), to_block(document.into())];
        assert_eq!(
            serde_json::to_value(blocks).unwrap(),
            json!([
                {"type": "resource_link", "uri": "https://e.com/a.png", "name": "https://e.com/a.png"},
                {"type": "resource", "resource": {"uri": "file:///r.pdf", "mimeType": "application/pdf", "blob": "JVBERi0="}},
            ])
        );
    }

    #[test]
    fn parts_read_as_resource_contents_under_the_uri_read() {
        let contents =
            |part: Part| serde_json::to_value(to_contents(part, "notes://a", Some("text/markdown")).unwrap()).unwrap();
        assert_eq!(
            contents(Text::new("# A").into()),
            json!({"uri": "notes://a", "mimeType": "text/markdown", "text": "# A"})
        );
        assert_eq!(
            contents(Image::data(b"\x89PNG".to_vec(), "image/png").into()),
            json!({"uri": "notes://a", "mimeType": "image/png", "blob": "iVBORw=="})
        );
        assert_eq!(
            contents(Resource::text("notes://b", "bee").into()),
            json!({"uri": "notes://b", "mimeType": "text/markdown", "text": "bee"})
        );
        let err = to_contents(Image::url("https://e.com/a.png").into(), "notes://a", None).unwrap_err();
        assert!(err.starts_with("a `image` part by reference"), "{err}");
    }

    #[test]
    fn bad_base64_from_a_server_is_named() {
        let err = from_block(&ContentBlock::image("%%", "image/png")).unwrap_err();
        assert!(err.starts_with("the image block: invalid base64"), "{err}");
    }
}
